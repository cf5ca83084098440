/**
 * The command line: progress as plain lines when stderr is not a terminal; Ctrl-C during a
 * load step writes a partial report (marked partial, schema-valid) and exits 130; `bench
 * compare` prints the before/after table; a bad flag exits 2 naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../../src/sim/index.js';
import { CLI } from '../fakes/infermeter-process.js';
import { reportValidator } from '../unit/bench/fixture.js';
import type { BenchReport } from '../../src/bench/report.js';

function run(args: string[], onStderr?: (text: string, kill: (s: NodeJS.Signals) => void) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      onStderr?.(stderr, (s) => child.kill(s));
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('Ctrl-C in a load step writes a partial report and exits 130; compare reads it', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 10, prefillTps: 0 });
  const out = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  try {
    let sent = false;
    const r = await run(['bench', '--target', sim.url, '--warmup', '1', '--requests', '2', '--output-tokens', '100', '--concurrency', '3', '--duration', '60s',
      '--nvidia-smi', 'none', '--engine-metrics', 'none', '--out', out], (text, kill) => {
      if (!sent && /step 1\/1: concurrency 3 for 60s: started/.test(text)) {
        sent = true;
        setTimeout(() => kill('SIGINT'), 800);
      }
    });
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /single-stream \(2 requests, one at a time\): started/, 'plain progress lines when not a TTY');
    assert.doesNotMatch(r.stderr, /\r|\x1b\[/);
    const report = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as BenchReport;
    const validate = reportValidator();
    assert.ok(validate(report), JSON.stringify(validate.errors));
    assert.equal(report.partial, true);
    assert.equal(report.singleStream!.summary.ok, 2);
    assert.equal(report.steps.length, 1);
    assert.ok(report.steps[0]!.summary.errors.client_abort! >= 1, 'streams cut by Ctrl-C are client_abort');
    assert.match(readFileSync(join(out, 'bench.md'), 'utf8'), /PARTIAL REPORT/);
    assert.match(readFileSync(join(out, 'bench.html'), 'utf8'), /PARTIAL REPORT/);
    assert.match(r.stdout, /^\| TTFT \(ms\) \|/m);

    const cmp = await run(['bench', 'compare', out, join(out, 'bench.json')]);
    assert.equal(cmp.code, 0, cmp.stderr);
    assert.match(cmp.stdout, /\| single-stream TTFT P50 \| [\d.]+ ms \| [\d.]+ ms \| \+0\.00 ms \| \+0\.0% \|/);

    // Against a different report (issue 29: it used to compare a report with itself only): B
    // is A with a TTFT P50 10 ms slower and a different arrival process; the deltas are worked
    // out here from the two numbers.
    const b = structuredClone(report);
    const ttftA = report.singleStream!.summary.ttft.p50!;
    b.singleStream!.summary.ttft.p50 = ttftA + 0.010;
    b.config.arrivals = b.config.arrivals === 'poisson' ? 'constant' : 'poisson';
    writeFileSync(join(out, 'b.json'), JSON.stringify(b));
    const cmp2 = await run(['bench', 'compare', join(out, 'bench.json'), join(out, 'b.json')]);
    assert.equal(cmp2.code, 0, cmp2.stderr);
    const row = `| single-stream TTFT P50 | ${(ttftA * 1000).toFixed(2)} ms | ${((ttftA + 0.010) * 1000).toFixed(2)} ms | +10.00 ms | +${((0.010 / ttftA) * 100).toFixed(1)}% |`;
    assert.ok(cmp2.stdout.split('\n').includes(row), `${row}\nin\n${cmp2.stdout}`);
    assert.match(cmp2.stdout, /^note: arrivals differs \(A .+, B .+\)$/m);
    assert.match(cmp2.stdout, /^note: A and B partial$/m);
  } finally {
    await sim.close();
    rmSync(out, { recursive: true, force: true });
  }
});

test('a bad flag exits 2 naming it', async () => {
  const r = await run(['bench', '--target', 'http://127.0.0.1:1', '--slo', 'ttfo=1s']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--slo: ttfo is not judged/);
});

test('a target that lists its model but fails every request: the phase with no successful request fails the run (exit 1), naming the error kind and its cause', { timeout: 60_000 }, async () => {
  // A target nothing listens on stops bench before any phase (exit-codes.test.ts); this one
  // answers the start-up reads and resets each generation request.
  const { createServer } = await import('node:http');
  const s = createServer((req, res) => {
    if (req.method === 'GET') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
      return;
    }
    req.socket.destroy();
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const target = `http://127.0.0.1:${(s.address() as { port: number }).port}`;
  const out = mkdtempSync(join(tmpdir(), 'bench-dead-'));
  try {
    const r = await run(['bench', '--target', target, '--model', 'm', '--warmup', '0', '--requests', '2', '--qps', 'none',
      '--nvidia-smi', 'none', '--engine-metrics', 'none', '--out', out]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /bench: single-stream failed \(no successful request\): 0\/2 ok; errors: [a-z_]+ 2 \(.+\)/);
    // The report is still written: the failure is in it, and the exit says so.
    assert.equal((JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as BenchReport).singleStream!.summary.ok, 0);
  } finally {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
    rmSync(out, { recursive: true, force: true });
  }
});

test('--max-error-rate: a phase over it fails (exit 1); a bad value exits 2; a healthy run exits 0', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 1, prefillTps: 0 });
  const out = mkdtempSync(join(tmpdir(), 'bench-rate-'));
  try {
    const bad = await run(['bench', '--target', sim.url, '--max-error-rate', '2']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--max-error-rate: expected a share from 0 to 1/);
    const args = ['bench', '--target', sim.url, '--warmup', '0', '--requests', '3', '--output-tokens', '4', '--qps', 'none', '--nvidia-smi', 'none', '--engine-metrics', 'none', '--out', out];
    const healthy = await run([...args, '--max-error-rate', '0']);
    assert.equal(healthy.code, 0, healthy.stderr);
    // A model the simulator does not serve: every request is a 404, so even a lenient threshold fails.
    const wrong = await run([...args, '--model', 'no-such-model', '--max-error-rate', '0.5']);
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, /bench: single-stream failed \(error rate above --max-error-rate 0\.5\): 0\/3 ok; errors: upstream_error 3 \(HTTP 4\d\d/);
  } finally {
    await sim.close();
    rmSync(out, { recursive: true, force: true });
  }
});
