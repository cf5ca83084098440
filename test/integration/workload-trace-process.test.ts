/**
 * The workload trace in the real daemon (`infermeter serve` as a child process, the simulator
 * as its upstream): with --workers every worker's requests reach one trace; each line also
 * goes out as an OTLP log record to the fake receiver; an unwritable path stops startup naming
 * the flag; a file size limit reached mid-run stops the trace with one error line, never the proxy.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { spawnSimulator, type SimulatorProcess } from '../../src/sim/child.js';
import { FakeOtlpReceiver } from '../fakes/otlp-receiver.js';
import { CLI, InfermeterProcess, type LogLine } from '../fakes/infermeter-process.js';
import { scrape, sumSamples } from '../helpers.js';
import { APIS, body, readLines, send, waitForLines } from './workload-trace-helpers.js';

const MARKER = 'OTLP-MARKER-4417';
let dir: string;
let sim: SimulatorProcess;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'infermeter-trace-proc-'));
  sim = await spawnSimulator(['--listen', '127.0.0.1:0', '--speed', '20', '--models', 'sim-a', '--output-tokens', '4-8']);
});
after(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('--workers 2: every worker\'s requests in one trace; each line also an OTLP log record, its body the line exactly', async () => {
  const receiver = new FakeOtlpReceiver();
  const otlp = await receiver.start();
  const file = join(dir, 'workers.jsonl');
  const proc = InfermeterProcess.forUpstream(sim.url, ['--workers', '2', '--workload-trace', file, '--workload-trace-otlp', 'true', '--prompt-hash-salt', 's'],
    { OTEL_EXPORTER_OTLP_ENDPOINT: otlp });
  // Two workers and the OTLP SDK on a loaded 2-core machine can take longer than the default 15 s to be ready.
  await proc.start(60_000);
  try {
    // A connection per request: node:cluster's primary hands connections to the workers in turn.
    const n = 12;
    for (let i = 0; i < n; i++) {
      const agent = new Agent({ pipelining: 0 });
      const api = APIS[i % APIS.length]!;
      const r = await send(proc.proxyUrl, api, body(api, 'sim-a', `system ${i}`, `user ${MARKER}`, i % 2 === 0, 5), {}, agent);
      assert.equal(r.status, 200);
      await agent.close();
    }
    const lines = await waitForLines(file, n);
    assert.equal(lines.length, n);
    const { samples } = await scrape(`${proc.metricsUrl}/metrics`);
    assert.equal(sumSamples(samples, 'infermeter_workload_trace_requests_total', { result: 'written' }), n);
    await receiver.waitFor(() => receiver.logs.length >= n, 10_000);
    const text = readFileSync(file, 'utf8').trim().split('\n');
    const start = (JSON.parse(readFileSync(`${file}.meta.json`, 'utf8')) as { start_unix_ms: number }).start_unix_ms;
    assert.deepEqual(receiver.logs.map((l) => l.body).sort(), [...text].sort(), 'the bodies are the file\'s lines');
    for (const l of receiver.logs) {
      const line = JSON.parse(l.body as string) as { timestamp: number; model: string; api: string };
      assert.equal(l.encoding, 'protobuf');
      assert.equal(l.eventName, 'infermeter.workload_trace.request');
      assert.equal(Math.round(l.timeNs / 1e6), start + line.timestamp, 'the record\'s time is the request\'s arrival');
      assert.deepEqual(l.attributes, { 'infermeter.workload_trace.start_unix_ms': start, 'infermeter.workload_trace.block_size': 512, 'gen_ai.request.model': 'sim-a', 'infermeter.api': line.api });
      assert.equal(l.scope.name, 'infermeter.workload_trace');
    }
    assert.ok(!receiver.rawBodies.join('').includes(MARKER), 'no prompt over OTLP');
  } finally {
    await proc.stop();
    await receiver.close();
  }
});

test('an unwritable --workload-trace stops startup naming the flag', () => {
  for (const path of [join(dir, 'no-such-dir', 't.jsonl'), dir]) {
    const r = spawnSync(process.execPath, [CLI, '--upstream', sim.url, '--workload-trace', path, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0'],
      { encoding: 'utf8', env: { PATH: process.env['PATH'] }, timeout: 15_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--workload-trace: cannot write /);
  }
});

test('a file size limit reached mid-run stops the trace with one error line; the proxy goes on serving and metering', async () => {
  const file = join(dir, 'limited.jsonl');
  // The shell's limit on file size (1 KiB blocks) is inherited by the daemon: writes past it fail
  // with EFBIG (node ignores SIGXFSZ), as on a full disk.
  const args = [CLI, '--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host',
    '--workload-trace', file, '--prompt-hash-salt', 's'];
  const child = spawn('bash', ['-c', 'ulimit -f 3 && exec "$0" "$@"', process.execPath, ...args], { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: LogLine[] = [];
  let out = '';
  const ready = new Promise<{ proxy: string; metrics: string }>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      for (;;) {
        const nl = out.indexOf('\n');
        if (nl < 0) break;
        const l = out.slice(0, nl);
        out = out.slice(nl + 1);
        try {
          const parsed = JSON.parse(l) as LogLine;
          logs.push(parsed);
          if (parsed.msg === 'infermeter ready') resolve({ proxy: `http://${String(parsed['proxy'])}`, metrics: `http://${String(parsed['metrics'])}/metrics` });
        } catch {
          // not a log line
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  try {
    const urls = await ready;
    const n = 30;
    for (let i = 0; i < n; i++) {
      const r = await send(urls.proxy, 'chat', body('chat', 'sim-a', 'system', `question ${i}`, true, 5));
      assert.equal(r.status, 200, `request ${i} is served`);
    }
    const seen = (x: typeof samples) => sumSamples(x, 'infermeter_workload_trace_requests_total');
    let samples = (await scrape(urls.metrics)).samples;
    for (let t = 0; t < 200 && seen(samples) < n; t++) {
      await new Promise((r) => setTimeout(r, 50));
      samples = (await scrape(urls.metrics)).samples;
    }
    assert.equal(sumSamples(samples, 'infermeter_workload_trace_writing'), 0, 'the trace stopped');
    const written = sumSamples(samples, 'infermeter_workload_trace_requests_total', { result: 'written' });
    const failed = sumSamples(samples, 'infermeter_workload_trace_requests_total', { result: 'failed' });
    assert.ok(written > 0 && failed > 0 && written + failed === n, `written ${written}, failed ${failed}`);
    const stopped = logs.filter((l) => String(l.msg).startsWith('workload trace stopped'));
    assert.equal(stopped.length, 1, 'one error line');
    assert.equal(stopped[0]!['code'], 'EFBIG');
    const raw = readFileSync(file, 'utf8');
    assert.ok(raw.length <= 3 * 1024 && raw.endsWith('\n'), 'whole lines only, within the limit');
    assert.equal(readLines(file).length, written);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
});
