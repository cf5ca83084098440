/**
 * Lints the Dockerfile without a Docker engine: its instructions are parsed and checked
 * against infermeter's own defaults (ports from OPTIONS, the bin from package.json).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { OPTIONS } from '../../../src/config.js';
import { dockerignoreFilter, parseDockerfile, type Stage } from '../../fakes/dockerfile.js';

const ROOT = new URL('../../../../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, ROOT), 'utf8');

const { stages } = parseDockerfile(read('Dockerfile'));
const [build, runtime] = [stages[0]!, stages.at(-1)!];
const all = (s: Stage, op: string) => s.body.filter((i) => i.op === op);
const defaultPort = (key: string) => Number(OPTIONS.find((o) => o.key === key)!.default!.split(':').pop());

test('multi-stage: a build stage with dev dependencies, a slim runtime with production ones', () => {
  assert.ok(stages.length >= 2);
  // The runtime line: Node 24 LTS, one of the lines package.json's engines names.
  assert.equal(runtime.base, 'node:24-bookworm-slim');
  assert.ok(stages.every((s) => s.base === runtime.base), 'every stage runs the same Node');
  const engines = JSON.parse(read('package.json')).engines.node as string;
  assert.ok(engines.split('||').some((range) => range.trim().startsWith('^24.')), `engines (${engines}) names the image's line`);
  assert.ok(build.name, 'the build stage is named');
  const buildRuns = all(build, 'RUN').map((i) => i.args).join('\n');
  assert.match(buildRuns, /npm ci(?![^\n]*--omit=dev)/);
  assert.match(buildRuns, /npm run build/);
  const runtimeRuns = all(runtime, 'RUN').map((i) => i.args).join('\n');
  assert.match(runtimeRuns, /npm ci [^\n]*--omit=dev/);
  assert.doesNotMatch(runtimeRuns, /npm run build|tsc/);
  const fromBuild = all(runtime, 'COPY').filter((c) => c.args.includes(`--from=${build.name}`));
  assert.ok(fromBuild.some((c) => c.args.includes('/dist/src')), 'the runtime copies the compiled dist/src from the build stage');
});

test('the runtime runs as a non-root user', () => {
  const users = all(runtime, 'USER');
  assert.ok(users.length > 0, 'USER is set in the final stage');
  assert.ok(!['root', '0', '0:0'].includes(users.at(-1)!.args), `final USER ${users.at(-1)!.args} is not root`);
});

test('EXPOSE lists exactly the proxy and metrics ports of the config defaults', () => {
  const exposed = all(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/)).map((p) => Number(p.split('/')[0])).sort();
  assert.deepEqual(exposed, [defaultPort('listen'), defaultPort('metricsListen')].sort());
  const header = read('Dockerfile');
  for (const p of exposed) assert.match(header, new RegExp(`#\\s+${p}\\s`), `port ${p} is documented in the Dockerfile`);
});

test('HEALTHCHECK hits /healthz on the metrics port with node (no curl in slim images)', () => {
  const [hc] = all(runtime, 'HEALTHCHECK');
  assert.ok(hc, 'HEALTHCHECK present');
  const cmd = JSON.parse(hc.args.slice(hc.args.indexOf('CMD') + 3).trim()) as string[];
  assert.equal(cmd[0], 'node');
  assert.equal(cmd[1], '-e');
  assert.match(cmd[2]!, /fetch\(/);
  assert.match(cmd[2]!, /\/healthz/);
  assert.match(cmd[2]!, new RegExp(`'${defaultPort('metricsListen')}'`));
  assert.doesNotMatch(hc.args, /curl|wget/);
});

test('nvidia-smi is reachable under the NVIDIA runtime', () => {
  const env = all(runtime, 'ENV').map((i) => i.args).join(' ');
  assert.match(env, /NVIDIA_VISIBLE_DEVICES=all/);
  assert.match(env, /NVIDIA_DRIVER_CAPABILITIES=\S*utility/);
});

test('the entrypoint is the package bin', () => {
  const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
  const [ep] = all(runtime, 'ENTRYPOINT');
  assert.ok(ep);
  const argv = JSON.parse(ep.args) as string[];
  assert.equal(argv[0], 'node');
  assert.equal(argv[1], `/app/${pkg.bin['infermeter']}`);
  assert.ok(all(runtime, 'WORKDIR').some((w) => w.args === '/app'));
});

test('.dockerignore keeps node_modules and dist out and lets every COPY source in', () => {
  const included = dockerignoreFilter(read('.dockerignore'));
  assert.ok(!included('node_modules'));
  assert.ok(!included('dist'));
  assert.ok(!included('.git'));
  for (const s of stages) {
    for (const c of all(s, 'COPY').filter((i) => !i.args.startsWith('--from'))) {
      const sources = c.args.split(/\s+/).slice(0, -1);
      for (const src of sources) {
        if (src === '.') continue;
        assert.ok(existsSync(new URL(src, ROOT)), `${src} exists`);
        assert.ok(included(src), `${src} is not excluded by .dockerignore`);
      }
    }
  }
  for (const needed of ['package.json', 'package-lock.json', 'tsconfig.json', 'src']) assert.ok(included(needed), needed);
});
