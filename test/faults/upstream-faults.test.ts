/**
 * Upstream faults: resets at random points of a stream, stalls past the idle timeout,
 * keep-alive sockets closed after every response, 5xx HTML, truncated bodies. The client
 * always gets the exact upstream bytes, or a prefix of them and then a broken connection
 * (never a silently shortened stream, never an invented byte), and every request ends with
 * exactly one outcome.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { startHostileUpstream, streamBody, type Hostile } from '../fakes/hostile-upstream.js';
import { fdsSettle, openFds, report, rss, startInfermeterProcess, totalRequests, type Infermeter } from './harness.js';

let upstream: Hostile;
let im: Infermeter;
let sent = 0;
before(async () => {
  upstream = await startHostileUpstream();
  im = await startInfermeterProcess(upstream.url, ['--idle-timeout', '300ms']);
});
after(async () => {
  await im.stop();
  await upstream.close();
});

interface Result { status: number; body: Buffer; error: boolean }

async function call(agent: Agent, fault: string, seed: number): Promise<Result> {
  sent++;
  const chunks: Buffer[] = [];
  try {
    const res = await request(`${im.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-fault': fault, 'x-seed': String(seed) },
      body: JSON.stringify({ model: 'hostile', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'x' }] }),
    });
    try {
      for await (const c of res.body) chunks.push(c as Buffer);
    } catch {
      return { status: res.statusCode, body: Buffer.concat(chunks), error: true };
    }
    return { status: res.statusCode, body: Buffer.concat(chunks), error: false };
  } catch {
    return { status: 0, body: Buffer.concat(chunks), error: true };
  }
}

async function scenario(name: string, count: number, concurrency: number, run: (i: number, agent: Agent) => Promise<{ bytes: number; anomaly: boolean }>): Promise<void> {
  const fdsBefore = openFds(im.pid);
  const before = await totalRequests(im.metricsUrl);
  const agent = new Agent({ connections: concurrency });
  let peak = rss(im.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rss(im.pid))), 50);
  let next = 0;
  let bytes = 0;
  let anomalies = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const r = await run(next++, agent);
        bytes += r.bytes;
        if (r.anomaly) anomalies++;
      }
    }),
  );
  clearInterval(sampler);
  await agent.close();
  const counted = (await totalRequests(im.metricsUrl, 5000, before + count)) - before;
  if (counted !== count) anomalies += Math.abs(count - counted);
  const fdsAfter = await fdsSettle(im.pid, fdsBefore);
  report({ scenario: name, requests: count, bytesCompared: bytes, anomalies, peakRssMiB: Math.round(peak / 2 ** 20), fdsBefore, fdsAfter });
  assert.equal(anomalies, 0, `${name}: ${anomalies} anomalies`);
  assert.equal(counted, count, `${name}: every request has exactly one outcome`);
  assert.ok(fdsAfter <= fdsBefore + 2, `${name}: descriptors ${fdsBefore} → ${fdsAfter}`);
}

function isPrefix(got: Buffer, full: Buffer): boolean {
  return got.length <= full.length && full.subarray(0, got.length).equals(got);
}

test('upstream resets the connection at random points of the stream', async () => {
  await scenario('upstream reset mid-stream', 150, 10, async (i, agent) => {
    const full = streamBody(i);
    const at = (i * 7919) % full.length;
    const r = await call(agent, `reset:${at}`, i);
    // Headers were out before the reset: a prefix, then a broken stream.
    return { bytes: r.body.length, anomaly: !r.error || !isPrefix(r.body, full) || r.body.length > at };
  });
});

test('upstream stalls past the idle timeout', async () => {
  await scenario('upstream stall > idle timeout', 20, 10, async (i, agent) => {
    const full = streamBody(i);
    const at = (i * 104729) % full.length;
    const r = await call(agent, `stall:${at}`, i);
    return { bytes: r.body.length, anomaly: !r.error || !isPrefix(r.body, full) };
  });
});

test('upstream closes its keep-alive socket after every response (llama-server style)', async () => {
  await scenario('upstream closes after each response', 300, 8, async (i, agent) => {
    const r = await call(agent, 'close-after', i);
    return { bytes: r.body.length, anomaly: r.error || r.status !== 200 || !r.body.equals(streamBody(i)) };
  });
});

test('upstream answers 5xx with an HTML page', async () => {
  await scenario('upstream 5xx HTML', 60, 6, async (i, agent) => {
    const code = [500, 502, 503][i % 3]!;
    const r = await call(agent, `status:${code}`, i);
    const expected = `<html><body><h1>${code} upstream exploded</h1></body></html>`;
    return { bytes: r.body.length, anomaly: r.error || r.status !== code || r.body.toString() !== expected };
  });
});

test('upstream sends a truncated body (Content-Length larger than what arrives)', async () => {
  await scenario('upstream truncated body', 40, 4, async (i, agent) => {
    const r = await call(agent, 'truncate', i);
    return { bytes: r.body.length, anomaly: !r.error || !isPrefix(r.body, streamBody(i)) };
  });
});
