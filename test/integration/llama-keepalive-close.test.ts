/**
 * Real engine: llama-server closes the connection after every streamed response while its
 * headers advertise keep-alive. A pooled client that reuses such a socket can send a request
 * into a connection the server is closing; the proxy must absorb that (it retries a request
 * that failed before any response byte on a reused socket). 500 streamed requests at
 * concurrency 8 through infermeter must all succeed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, Agent } from 'node:http';
import { PassThrough } from 'node:stream';
import { readSse, startLlamaServer, startMeter, sum, waitFor, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const TOTAL = 500;
const CONCURRENCY = 8;

withLlama('500 streamed requests at concurrency 8 through infermeter, zero errors', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  // infermeter logs each retry at debug level; counted to show the retry path is exercised.
  let retries = 0;
  const log = new PassThrough();
  log.on('data', (d: Buffer) => { retries += d.toString().split('retrying once').length - 1; });
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 4 });
    meter = await startMeter(llama.url, { logLevel: 'debug' }, log);
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  test('premise: the server advertises keep-alive, then closes the socket after a streamed response', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const body = JSON.stringify({ model: 'tiny-llama', prompt: 'hi', stream: true, max_tokens: 4 });
    const { headers, closedAfterEnd } = await new Promise<{ headers: Record<string, unknown>; closedAfterEnd: boolean }>((resolve, reject) => {
      const req = httpRequest(`${llama.url}/v1/completions`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        const socket = res.socket; // detached from the response once it ends
        let closed = false;
        socket.once('close', () => { closed = true; });
        res.resume();
        res.on('end', () => {
          if (closed || socket.destroyed) return resolve({ headers: res.headers, closedAfterEnd: true });
          const t = setTimeout(() => resolve({ headers: res.headers, closedAfterEnd: false }), 1000);
          socket.once('close', () => { clearTimeout(t); resolve({ headers: res.headers, closedAfterEnd: true }); });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
    agent.destroy();
    assert.match(String(headers['keep-alive'] ?? ''), /timeout=/, 'keep-alive advertised');
    assert.notEqual(String(headers['connection'] ?? '').toLowerCase(), 'close');
    assert.ok(closedAfterEnd, 'the server closed the connection within 1 s of the end of the stream');
  });

  test(`${TOTAL} requests at concurrency ${CONCURRENCY}: every one completes, infermeter counts them all ok`, async () => {
    const before = await meter.scrape();
    const errors = new Map<string, number>();
    let next = 0;
    let completed = 0;
    const worker = async () => {
      while (next < TOTAL) {
        const i = next++;
        const stream = i % 2 === 0;
        const route = i % 4 < 2 ? 'chat/completions' : 'completions';
        const payload = route === 'completions'
          ? { model: 'tiny-llama', prompt: `request ${i}`, stream, max_tokens: 4 }
          : { model: 'tiny-llama', messages: [{ role: 'user', content: `request ${i}` }], stream, max_tokens: 4 };
        try {
          const res = await fetch(`${meter.url}/v1/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
          if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
          if (stream) {
            const { events } = await readSse(res);
            if (events.length < 4) throw new Error(`short stream: ${events.length} events`);
          } else {
            await res.json();
          }
          completed++;
        } catch (err) {
          const e = err as Error & { cause?: { code?: string } };
          const key = `${e.cause?.code ?? e.name}: ${e.message}`;
          errors.set(key, (errors.get(key) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.log(`# ${completed} completed, ${errors.size} distinct client errors; infermeter retried ${retries} requests on a socket the server had closed`);
    assert.deepEqual(Object.fromEntries(errors), {}, 'no client saw an error');
    assert.equal(completed, TOTAL);
    const after = await waitFor('all requests in /metrics', async () => {
      const s = await meter.scrape();
      return sum(s, 'infermeter_requests_total') - sum(before, 'infermeter_requests_total') >= TOTAL ? s : undefined;
    });
    const byOutcome = (outcome: string) => sum(after, 'infermeter_requests_total', { outcome }) - sum(before, 'infermeter_requests_total', { outcome });
    const notOk = after.filter((s) => s.name === 'infermeter_requests_total' && s.labels['outcome'] !== 'ok' && s.value > 0);
    assert.deepEqual(notOk.map((s) => s.labels), [], 'no outcome other than ok');
    assert.equal(byOutcome('ok'), TOTAL);
  });
});
