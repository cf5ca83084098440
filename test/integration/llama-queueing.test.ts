/**
 * Real engine: with more clients than server slots (--parallel 1, 4 clients), llama-server
 * queues the rest (`llamacpp:requests_deferred`). Queueing happens before the first token,
 * so infermeter's TTFT must grow with each client's place in the queue, agree with the
 * clients' stopwatches, and its in-flight gauge must show every waiting request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { parsePrometheusText, type Sample } from '../../src/lib/prom-text.js';
import { startLlamaServer, startMeter, sum, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const CLIENTS = 4;
const MAX_TOKENS = 96;
/**
 * Per request, what the clients' stopwatches hold beyond infermeter's: the hop in, the hop
 * out, and the client's own work. Here four clients, their SSE parsing, infermeter and a
 * sampler share one event loop on a 2-core machine that also runs llama-server, so this is
 * wider than in llama-stream-timing (measured 10-40 ms per request under load).
 */
const CLIENT_OVERHEAD_MS = 60;
/**
 * infermeter publishes in-flight changes to its metrics thread in batches (every 20 ms, later
 * when the event loop is busy), so a sample taken right after the requests arrived can still
 * show the old value (0 was seen while the server already held all 4): most samples, not all.
 */
const GAUGE_AGREEMENT = 0.8;

withLlama('under queueing infermeter\'s TTFT rises and its in-flight gauge counts the waiting requests', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  let client: OpenAI;
  let sent = 0;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1 });
    meter = await startMeter(llama.url);
    client = new OpenAI({ baseURL: `${meter.url}/v1`, apiKey: 'none', maxRetries: 0 });
    await ask('warm up');
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  async function ask(prompt: string): Promise<{ ttft: number; e2e: number }> {
    sent++;
    const start = performance.now();
    const stream = await client.chat.completions.create({
      model: 'tiny-llama', messages: [{ role: 'user', content: prompt }], stream: true, max_tokens: MAX_TOKENS, temperature: 0,
    });
    let first = 0;
    for await (const chunk of stream) if (first === 0 && chunk.choices[0]?.delta?.content) first = performance.now();
    return { ttft: first - start, e2e: performance.now() - start };
  }

  test(`${CLIENTS} clients, 1 slot: TTFT grows with the queue, in-flight gauge = clients`, async () => {
    // The service time of one request alone: the quickest of three (a scheduler stall on this
    // shared machine must not inflate the yardstick).
    const alones = [await ask('alone'), await ask('alone'), await ask('alone')];
    const alone = alones.reduce((a, b) => (b.e2e < a.e2e ? b : a));
    const before = await meter.settled(sent);

    // Sample both sides while the clients run: infermeter's gauge and the server's queue.
    let sampling = true;
    const gauges: { inFlight: number; processing: number; deferred: number }[] = [];
    const sampler = (async () => {
      while (sampling) {
        const [mine, theirs] = await Promise.all([meter.scrape(), fetch(`${llama.url}/metrics`).then(async (r) => parsePrometheusText(await r.text()).samples)]);
        gauges.push({
          inFlight: sum(mine, 'infermeter_requests_in_flight'),
          processing: sum(theirs, 'llamacpp:requests_processing'),
          deferred: sum(theirs, 'llamacpp:requests_deferred'),
        });
      }
    })();
    const results = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => ask(`client ${i}`)));
    sampling = false;
    await sampler;

    const after: Sample[] = await meter.settled(sent);
    const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
    const meterTtftSum = (sum(after, 'gen_ai_server_time_to_first_token_seconds_sum') - sum(before, 'gen_ai_server_time_to_first_token_seconds_sum')) * 1000;
    const clientTtftSum = ttfts.reduce((a, b) => a + b, 0);
    console.log(`# alone: ttft ${alone.ttft.toFixed(1)} ms, e2e ${alone.e2e.toFixed(1)} ms; queued client TTFTs ${ttfts.map((t) => t.toFixed(1)).join(', ')} ms; `
      + `sum client ${clientTtftSum.toFixed(1)} ms, infermeter ${meterTtftSum.toFixed(1)} ms`);
    console.log(`# gauges sampled (in-flight/processing/deferred): ${gauges.map((g) => `${g.inFlight}/${g.processing}/${g.deferred}`).join(' ')}`);

    // The k-th client in line waits for about k whole generations before its first token.
    for (let k = 1; k < CLIENTS; k++) {
      assert.ok(ttfts[k]! >= k * alone.e2e * 0.6, `client #${k} TTFT ${ttfts[k]!.toFixed(1)} ms >= ~${k} x e2e (${alone.e2e.toFixed(1)} ms)`);
    }
    // infermeter sees the same rise: from its histogram, at least CLIENTS - k requests have a
    // TTFT above the largest bucket boundary under 0.6 k e2e.
    const bounds = [...new Set(after.filter((s) => s.name === 'gen_ai_server_time_to_first_token_seconds_bucket').map((s) => s.labels['le']!))]
      .filter((le) => le !== '+Inf').map(Number).sort((a, b) => a - b);
    const le = (bound: number | string) => {
      const match = { le: String(bound) };
      return sum(after, 'gen_ai_server_time_to_first_token_seconds_bucket', match) - sum(before, 'gen_ai_server_time_to_first_token_seconds_bucket', match);
    };
    assert.equal(le('+Inf'), CLIENTS);
    for (let k = 1; k < CLIENTS; k++) {
      const b = bounds.filter((x) => x * 1000 <= k * alone.e2e * 0.6).at(-1)!;
      assert.ok(CLIENTS - le(b) >= CLIENTS - k, `infermeter: ${CLIENTS - le(b)} requests with TTFT > ${b} s, expected >= ${CLIENTS - k}`);
    }
    assert.ok(clientTtftSum >= meterTtftSum, 'infermeter\'s clock runs inside the clients\'');
    assert.ok(clientTtftSum - meterTtftSum <= CLIENTS * CLIENT_OVERHEAD_MS, `sum of TTFT: client ${clientTtftSum.toFixed(1)} vs infermeter ${meterTtftSum.toFixed(1)} ms`);

    const full = gauges.filter((g) => g.processing + g.deferred === CLIENTS);
    assert.ok(full.length > 0, 'the server held every client at once (one processing, the rest deferred)');
    assert.ok(full.some((g) => g.processing === 1 && g.deferred === CLIENTS - 1), 'one slot busy, the rest queued');
    const agreeing = full.filter((g) => g.inFlight === CLIENTS).length;
    assert.ok(agreeing >= full.length * GAUGE_AGREEMENT, `while the server held ${CLIENTS}, infermeter's in-flight gauge said ${CLIENTS} in ${agreeing} of ${full.length} samples`);
    assert.equal(Math.max(...gauges.map((g) => g.inFlight)), CLIENTS, 'the gauge never over-counts');
    assert.equal(sum(after, 'infermeter_requests_in_flight'), 0);
  });
});
