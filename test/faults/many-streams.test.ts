/**
 * 10,000 concurrent open streams on one infermeter process (or as many as this machine's
 * descriptor limit allows: each proxied stream holds two sockets, client side and upstream
 * side, and a process at its limit can only reset new connections), all answered, none
 * refused; memory per stream measured.
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

test('10,000 concurrent streams (descriptor limit permitting): all served, memory per stream measured', async () => {
  const limit = hardFdLimit();
  const streams = Number(process.env["MANY_STREAMS"] ?? Math.min(10_000, Math.floor((limit - 1000) / 2)));
  if (streams < 10_000) console.log(`descriptor limit ${limit}: ${streams} streams (2 descriptors each in the proxy)`);
  const up = spawn(process.execPath, [`${ROOT}dist/bench/upstream.js`], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_KEEPALIVE_MS: '1000' } });
  const port = await new Promise<number>((resolve) => up.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const im = await startInfermeterProcess(`http://127.0.0.1:${port}`, ['--upstream-connections', String(streams + 100)]);
  const agent = new Agent({ connections: streams + 100, connectTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  try {
    const fds0 = openFds(im.pid);
    const rss0 = rss(im.pid);
    const all: Promise<{ ok: boolean; chunks: number }>[] = [];
    const body = (i: number) => JSON.stringify({ model: 'bench-model-0', stream: true, messages: [{ role: 'user', content: String(i) }], bench: { firstMs: 50, chunks: 4, gapMs: 9000 } });
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
