/**
 * deploy/compose: both stacks parse, agree with each other, with prometheus.yml and with
 * infermeter's flags and default ports; promtool checks the Prometheus config when present;
 * the demo load generator runs against a fake upstream.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { stringify } from 'yaml';
import { DAEMON_FLAGS, defaultPort, flagValue, flagsOf, readRepo, repoPath, yamlFile } from '../../fakes/deploy-files.js';
import { TinyUpstream, TINY_MODEL } from '../../fakes/tiny-upstream.js';
import { SIM_OPTIONS } from '../../../src/sim/options.js';
import { haveTool } from '../../helpers/tools.js';

interface Service {
  image?: string;
  build?: { context: string } | string;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  depends_on?: string[] | Record<string, unknown>;
  networks?: Record<string, { aliases?: string[] } | null>;
  deploy?: { resources?: { reservations?: { devices?: { driver?: string; count?: unknown; capabilities?: string[] }[] } } };
}
interface ComposeFile { include?: string[]; services: Record<string, Service>; volumes?: Record<string, unknown> }

const DIR = 'deploy/compose/';

/** A compose file with its `include`s merged in. */
function compose(file: string): ComposeFile {
  const doc = yamlFile<ComposeFile>(DIR + file);
  const services = { ...doc.services };
  const volumes = { ...(doc.volumes ?? {}) };
  for (const inc of doc.include ?? []) {
    const sub = yamlFile<ComposeFile>(DIR + inc);
    for (const [name, svc] of Object.entries(sub.services)) {
      assert.ok(!(name in services), `${file}: service ${name} defined twice`);
      services[name] = svc;
    }
    Object.assign(volumes, sub.volumes ?? {});
  }
  return { services, volumes };
}

const STACKS = { 'docker-compose.yml': compose('docker-compose.yml'), 'docker-compose.sim.yml': compose('docker-compose.sim.yml') };
const prometheus = yamlFile<{
  rule_files: string[];
  alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] };
  scrape_configs: { job_name: string; static_configs: { targets: string[] }[]; metrics_path?: string }[];
}>(DIR + 'prometheus.yml');

/** Every name a service answers to on the compose network. */
function hostnames(c: ComposeFile): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, svc] of Object.entries(c.services)) {
    out.set(name, name);
    for (const net of Object.values(svc.networks ?? {})) for (const a of net?.aliases ?? []) out.set(a, name);
  }
  return out;
}

/** Ports a service listens on inside the network (expose, published container ports, known defaults). */
function containerPorts(svc: Service): Set<number> {
  const ports = new Set<number>((svc.expose ?? []).map(Number));
  for (const p of svc.ports ?? []) ports.add(Number(p.split(':').pop()));
  return ports;
}

function infermeterArgs(svc: Service): string[] {
  return svc.command ?? [];
}

for (const [file, c] of Object.entries(STACKS)) {
  test(`${file}: infermeter's flags exist, its ports are the defaults, its upstream is a service`, () => {
    const im = c.services['infermeter'];
    assert.ok(im, 'an infermeter service');
    const args = infermeterArgs(im);
    for (const f of flagsOf(args)) assert.ok(DAEMON_FLAGS.has(f), `${f} is an infermeter flag`);
    assert.deepEqual([...containerPorts(im)].sort(), [defaultPort('listen'), defaultPort('metricsListen')].sort());
    const upstream = new URL(flagValue(args, '--upstream')!);
    const target = hostnames(c).get(upstream.hostname);
    assert.ok(target, `--upstream host ${upstream.hostname} is a service`);
    assert.ok(containerPorts(c.services[target]!).has(Number(upstream.port)), `${target} exposes ${upstream.port}`);
    const configPath = flagValue(args, '--config');
    assert.ok(configPath, 'infermeter runs with the SLO config the rules were generated from');
    assert.ok((im.volumes ?? []).some((v) => v.split(':')[1] === configPath && v.split(':')[0] === '../../examples/infermeter.yaml'), `${configPath} is mounted`);
    for (const [name, svc] of Object.entries(c.services)) {
      const deps = Array.isArray(svc.depends_on) ? svc.depends_on : Object.keys(svc.depends_on ?? {});
      for (const d of deps) assert.ok(c.services[d], `${name} depends on existing service ${d}`);
    }
  });

  test(`${file}: prometheus.yml targets and mounts match the services`, () => {
    const names = hostnames(c);
    for (const job of prometheus.scrape_configs) {
      for (const t of job.static_configs.flatMap((s) => s.targets)) {
        const [host, port] = t.split(':');
        if (host === 'localhost') continue;
        const svc = names.get(host!);
        assert.ok(svc, `${job.job_name} target ${t} is a service of ${file}`);
        assert.ok(containerPorts(c.services[svc]!).has(Number(port)) || svc === 'alertmanager', `${svc} listens on ${port}`);
      }
    }
    const infermeterJob = prometheus.scrape_configs.find((j) => j.job_name === 'infermeter');
    assert.deepEqual(infermeterJob?.static_configs[0]?.targets, [`infermeter:${defaultPort('metricsListen')}`]);
    const am = prometheus.alerting.alertmanagers[0]!.static_configs[0]!.targets[0]!;
    assert.ok(c.services[am.split(':')[0]!], 'the alertmanager target is a service');

    const prom = c.services['prometheus']!;
    const mounts = new Map((prom.volumes ?? []).map((v) => v.split(':')).map(([src, dst]) => [dst!, src!]));
    assert.equal(mounts.get('/etc/prometheus/prometheus.yml'), './prometheus.yml');
    for (const rf of prometheus.rule_files) assert.ok(mounts.has(rf), `rule file ${rf} is mounted`);
    assert.equal(mounts.get('/etc/prometheus/rules.yml'), '../prometheus/rules.yml');
    const grafana = c.services['grafana']!;
    const gmounts = new Map((grafana.volumes ?? []).map((v) => v.split(':')).map(([src, dst]) => [dst!, src!]));
    assert.equal(gmounts.get('/etc/grafana/provisioning'), '../../grafana/provisioning');
    assert.equal(gmounts.get('/var/lib/grafana/dashboards'), '../../grafana/dashboards');
  });

  test(`${file}: every bind-mounted host path and build context exists (or is generated by the slo branch)`, () => {
    for (const [name, svc] of Object.entries(c.services)) {
      for (const v of svc.volumes ?? []) {
        const src = v.split(':')[0]!;
        if (!src.startsWith('.')) continue; // a named volume
        const p = normalize(DIR + src);
        assert.ok(existsSync(repoPath(p)), `${name}: ${p} exists`);
      }
      const ctx = typeof svc.build === 'string' ? svc.build : svc.build?.context;
      if (ctx) assert.ok(existsSync(repoPath(normalize(DIR + ctx) + '/Dockerfile')), `${name}: build context has the Dockerfile`);
    }
  });
}

test('docker-compose.yml: vLLM reserves the GPUs; infermeter sees them for nvidia-smi', () => {
  const c = STACKS['docker-compose.yml'];
  for (const name of ['vllm', 'infermeter']) {
    const devices = c.services[name]!.deploy?.resources?.reservations?.devices ?? [];
    assert.ok(devices.some((d) => d.driver === 'nvidia' && d.capabilities?.includes('gpu')), `${name} reserves NVIDIA devices`);
  }
  assert.match(c.services['vllm']!.image!, /^vllm\/vllm-openai:v\d/);
  assert.ok(!c.services['vllm']!.ports, 'vLLM is not published: clients go through infermeter');
});

test('docker-compose.sim.yml: no GPU anywhere, the simulator and the fake nvidia-smi stand in', async () => {
  const c = STACKS['docker-compose.sim.yml'];
  for (const [name, svc] of Object.entries(c.services)) assert.ok(!svc.deploy?.resources?.reservations?.devices, `${name} needs no GPU`);
  const sim = c.services['simulator']!;
  assert.equal(sim.command?.[0], 'simulate');
  assert.equal(flagValue(sim.command!, '--listen'), '0.0.0.0:8000');
  // The simulate command's flags, checked against its own option table.
  const simFlags = flagsOf(sim.command!);
  assert.ok(simFlags.length > 0);
  for (const f of simFlags) assert.ok(SIM_OPTIONS.some((o) => o.flag.split(' ')[0] === f), `simulate ${f}`);
  const args = c.services['infermeter']!.command!;
  const smi = flagValue(args, '--nvidia-smi');
  assert.equal(smi, '/app/bin/fake-nvidia-smi');
  assert.match(readRepo('Dockerfile'), /COPY --from=build \/src\/bin \.\/bin/);
  accessSync(repoPath('bin/fake-nvidia-smi'), constants.X_OK);
  assert.equal(c.services['infermeter']!.environment?.['FAKE_NVIDIA_SMI_SIM_URL'], 'http://vllm:8000');
});

for (const file of ['docker-compose.yml', 'docker-compose.sim.yml']) {
  test(`${file}: infermeter's healthcheck is /readyz on its metrics port, and stopping leaves time for the drain`, () => {
    const svc = (yamlFile<{ services: Record<string, { healthcheck?: { test: string[] }; stop_grace_period?: string; command?: string[] }> }>(`deploy/compose/${file}`)).services['infermeter']!;
    const cmd = svc.healthcheck!.test.join(' ');
    assert.match(cmd, new RegExp(`127\\.0\\.0\\.1:${defaultPort('metricsListen')}/readyz`));
    assert.ok(!/curl|wget/.test(cmd), 'the slim image has node, not curl');
    const grace = Number(/^(\d+)s$/.exec(svc.stop_grace_period ?? '')?.[1]);
    assert.ok(grace > 30, `stop_grace_period ${svc.stop_grace_period} exceeds --shutdown-timeout`);
  });
}

test('alertmanager.yml routes to a defined receiver', () => {
  const am = yamlFile<{ route: { receiver: string }; receivers: { name: string }[] }>(DIR + 'alertmanager.yml');
  assert.ok(am.receivers.some((r) => r.name === am.route.receiver));
});

test('promtool accepts prometheus.yml with the shipped rules', (t) => {
  if (!haveTool(t, 'promtool', ['--version'], 'prometheus')) return;
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-prom-'));
  try {
    const cfg = yamlFile<Record<string, unknown>>(DIR + 'prometheus.yml');
    const rules = repoPath('deploy/prometheus/rules.yml');
    cfg['rule_files'] = [rules];
    writeFileSync(join(dir, 'prometheus.yml'), stringify(cfg));
    const r = spawnSync('promtool', ['check', 'config', join(dir, 'prometheus.yml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the demo load generator streams chat completions and stops after REQUESTS', async () => {
  const upstream = new TinyUpstream(3);
  const url = await upstream.start();
  try {
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawnAsync(process.execPath, [repoPath(DIR + 'loadgen.mjs')], { TARGET: url, MODEL: TINY_MODEL, CONCURRENCY: '2', REQUESTS: '4', PAUSE_MS: '1' });
      child.then(resolve);
    });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /loadgen: \d+ requests, 0 failed/);
    assert.ok(upstream.chatRequests >= 4);
  } finally {
    await upstream.close();
  }
});

async function spawnAsync(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { PATH: process.env['PATH'], ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

test('Grafana provisioning matches the compose mounts: data source and dashboard path', () => {
  const dir = repoPath('grafana/provisioning');
  const files = (readdirSync(dir, { recursive: true }) as string[]).filter((f) => /\.ya?ml$/.test(f));
  const docs = files.map((f) => yamlFile<{ datasources?: { type?: string; url?: string }[]; providers?: { options?: { path?: string } }[] }>(`grafana/provisioning/${f}`));
  const sources = docs.flatMap((d) => d.datasources ?? []).filter((d) => d.type === 'prometheus');
  assert.ok(sources.length > 0, 'a Prometheus data source is provisioned');
  for (const s of sources) assert.equal(new URL(s.url!).host, 'prometheus:9090', 'the data source is the compose Prometheus');
  const paths = docs.flatMap((d) => d.providers ?? []).map((p) => p.options?.path);
  assert.ok(paths.length > 0, 'a dashboard provider is provisioned');
  for (const p of paths) assert.equal(p, '/var/lib/grafana/dashboards', 'where compose mounts grafana/dashboards');
});
