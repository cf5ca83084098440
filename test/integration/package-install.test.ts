/**
 * The npm package works on a machine that only has it: `npm pack`, install the tarball in
 * an empty directory, then run the installed bin (help, version) and the daemon itself with
 * OTLP on, so every runtime file and production dependency is proven present.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../fakes/deploy-files.js';
import { FakeOtlpReceiver } from '../fakes/otlp-receiver.js';
import { TinyUpstream, TINY_MODEL } from '../fakes/tiny-upstream.js';
import { decodeMetricFamilies, PROTOBUF_CONTENT_TYPE } from '../../src/exporters/prometheus/proto.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> };
const work = mkdtempSync(join(tmpdir(), 'infermeter-pack-'));
const app = join(work, 'app');
let packed: { filename: string; files: { path: string }[] };

function run(cmd: string, args: string[], cwd: string, timeoutMs = 240_000) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, npm_config_update_notifier: 'false' } });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

before(() => {
  packed = (JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], ROOT)) as typeof packed[])[0]!;
  spawnSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'fresh-machine', private: true }));
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', join(work, packed.filename)], app);
});

after(() => rmSync(work, { recursive: true, force: true }));

test('the tarball holds the compiled CLI and its worker, not tests or TypeScript sources', () => {
  const files = new Set(packed.files.map((f) => f.path));
  assert.ok(files.has('package.json'));
  assert.ok(files.has(pkg.bin['infermeter']!), 'the bin');
  assert.ok(files.has('dist/src/daemon/metrics-thread-entry.js'), 'the metrics thread (loaded by URL, so no import would catch its absence)');
  assert.ok(files.has('schemas/prometheus/metrics.proto'), 'the protobuf exposition schema (read from disk when a scraper asks for protobuf)');
  for (const f of files) {
    assert.ok(!f.startsWith('dist/test/') && !f.startsWith('test/') && !f.startsWith('src/'), `${f} does not belong in the package`);
  }
});

test('the installed bin runs: --help and --version', () => {
  const installed = join(app, 'node_modules', pkg.name);
  const bin = join(installed, pkg.bin['infermeter']!);
  assert.equal(readFileSync(bin, 'utf8').split('\n')[0], '#!/usr/bin/env node');
  assert.ok(statSync(bin).mode & 0o111, 'executable');
  const help = run('npx', ['--no', '--', 'infermeter', '--help'], app, 60_000);
  assert.match(help, /Usage: infermeter/);
  assert.match(help, /serve/);
  assert.match(run('npx', ['--no', '--', 'infermeter', 'serve', '--help'], app, 60_000), /--upstream <url>/);
  assert.equal(run('npx', ['--no', '--', 'infermeter', '--version'], app, 60_000).trim(), pkg.version);
});

test('the installed daemon proxies, pushes OTLP and answers protobuf /metrics with production dependencies only', async () => {
  const receiver = new FakeOtlpReceiver();
  const upstream = new TinyUpstream(2);
  const otlp = await receiver.start();
  const up = await upstream.start();
  const child = spawn(join(app, 'node_modules', '.bin', 'infermeter'),
    ['--upstream', up, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--models', TINY_MODEL,
      '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'],
    { cwd: app, env: { PATH: process.env['PATH'], OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_METRIC_EXPORT_INTERVAL: '200' }, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const [proxy, metrics] = await new Promise<[string, string]>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /"proxy":"([^"]+)","metrics":"([^"]+)"[^\n]*"msg":"infermeter ready"/.exec(out);
        if (m) resolve([m[1]!, m[2]!]);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${err}${out}`)));
    });
    const res = await fetch(`http://${proxy}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: TINY_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
    await receiver.waitFor(() => receiver.latest('gen_ai.server.time_to_first_token') !== undefined, 10_000);
    const scrape = await fetch(`http://${metrics}/metrics`, { headers: { accept: PROTOBUF_CONTENT_TYPE } });
    assert.equal(scrape.headers.get('content-type'), PROTOBUF_CONTENT_TYPE);
    const families = decodeMetricFamilies(new Uint8Array(await scrape.arrayBuffer()));
    assert.ok(families.some((f) => f.name === 'gen_ai_server_time_to_first_token_seconds' && f.metric[0]?.histogram?.schema === 3));
    // The status page and its assets, uPlot included, come from the installed package.
    for (const path of ['/', '/ui/app.js', '/ui/uplot.js', '/ui/uplot.css', '/api/v1/status']) {
      const r = await fetch(`http://${metrics}${path}`);
      assert.equal(r.status, 200, path);
      assert.ok((await r.text()).length > 100, path);
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await receiver.close();
    await upstream.close();
  }
});
