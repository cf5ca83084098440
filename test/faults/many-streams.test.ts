// test-group: alone (thousands of streams and memory per stream: the machine to itself)
/**
 * Thousands of concurrent open streams on one infermeter process (or as many as this machine's
 * descriptor limit allows: each proxied stream holds two sockets, client side and upstream
 * side, and a process at its limit can only reset new connections), all answered, none
 * refused; memory per stream measured.
 *
 * The suite opens 2,000 (streams of 6 s); `npm run bench:streams` runs the same file at 10,000
 * (MANY_STREAMS=10000, streams of 27 s) for the figure docs/performance.md quotes, held to the
 * same bounds. MANY_STREAMS and MANY_STREAMS_GAP_MS (the gap between a stream's 4 chunks) set both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Agent } from 'undici';
import { streamOnce } from '../../bench/lib.js';
import { ROOT } from '../helpers.js';
import { fdsSettle, openFds, report, rss, startInfermeterProcess, totalRequests } from './harness.js';

function hardFdLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'))!;
  return Number(line.split(/\s+/)[4]);
}

const WANTED = Number(process.env['MANY_STREAMS'] ?? 2_000);
// Long enough that the first stream is still open when the last one opens (a wave of 500 each 100 ms).
const GAP_MS = Number(process.env['MANY_STREAMS_GAP_MS'] ?? (WANTED >= 5_000 ? 9_000 : 2_000));

test(`${WANTED.toLocaleString('en')} concurrent streams (descriptor limit permitting): all served, memory per stream measured`, { timeout: 180_000 }, async () => {
  const limit = hardFdLimit();
  const streams = Math.min(WANTED, Math.floor((limit - 1000) / 2));
  if (streams < WANTED) console.log(`descriptor limit ${limit}: ${streams} streams (2 descriptors each in the proxy)`);
  const up = spawn(process.execPath, [`${ROOT}dist/bench/upstream.js`], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_KEEPALIVE_MS: '1000' } });
  const port = await new Promise<number>((resolve) => up.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const im = await startInfermeterProcess(`http://127.0.0.1:${port}`, ['--upstream-connections', String(streams + 100)]);
  const agent = new Agent({ connections: streams + 100, connectTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  try {
    const fds0 = openFds(im.pid);
    const rss0 = rss(im.pid);
    const all: Promise<{ ok: boolean; chunks: number }>[] = [];
    const body = (i: number) => JSON.stringify({ model: 'bench-model-0', stream: true, messages: [{ role: 'user', content: String(i) }], bench: { firstMs: 50, chunks: 4, gapMs: GAP_MS } });
    // Open in waves so the listen backlog is not the thing being tested.
    for (let i = 0; i < streams; i += 500) {
      for (let j = i; j < Math.min(streams, i + 500); j++) all.push(streamOnce(agent, im.url, body(j), false).catch(() => ({ ok: false, chunks: 0 })));
      await new Promise((r) => setTimeout(r, 100));
    }
    // Wait for every stream to be open at once (two sockets each), up to 25 s.
    let open = openFds(im.pid);
    for (let i = 0; i < 250 && open - fds0 < streams * 2 - 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      open = openFds(im.pid);
    }
    const rss1 = rss(im.pid);
    const results = await Promise.all(all);
    const ok = results.filter((r) => r.ok && r.chunks === 4).length;
    const perStreamKiB = (rss1 - rss0) / streams / 1024;
    const counted = await totalRequests(im.metricsUrl, 10_000, streams);
    console.log(`streams=${streams} open_fds_at_peak=${open} served=${ok} rss ${(rss0 / 2 ** 20).toFixed(0)} → ${(rss1 / 2 ** 20).toFixed(0)} MiB = ${perStreamKiB.toFixed(1)} KiB per stream`);
    await agent.close();
    const fdsAfter = await fdsSettle(im.pid, fds0, 10_000);
    report({ scenario: `${streams} concurrent streams (${open} descriptors open at peak)`, requests: streams, bytesCompared: 0, anomalies: streams - ok, peakRssMiB: Math.round(rss1 / 2 ** 20), fdsBefore: fds0, fdsAfter });
    assert.ok(open - fds0 >= streams * 2 - 50, `the streams were open at once (${open - fds0} descriptors)`);
    assert.equal(ok, streams, 'every stream served in full');
    assert.equal(counted, streams);
    assert.ok(perStreamKiB < 64, `${perStreamKiB.toFixed(1)} KiB per stream`);
    assert.ok(fdsAfter <= fds0 + 4, `descriptors back to ${fdsAfter} from ${fds0} after the streams ended`);
  } finally {
    if (!agent.closed) await agent.close();
    await im.stop();
    up.kill('SIGTERM');
  }
});
