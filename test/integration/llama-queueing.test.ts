// test-group: alone (queueing read from a real engine's timing)
/**
 * Real engine: with more clients than server slots (--parallel 1, 4 clients), llama-server
 * queues the rest (`llamacpp:requests_deferred`). Queueing happens before the first token,
 * so infermeter's TTFT must grow with each client's place in the queue, agree with the
 * clients' stopwatches, and its in-flight gauge must show every waiting request.
 *
 * The gauge is compared like with like. infermeter publishes its count to the metrics thread
 * in batches (every 20 ms, later when its loop is busy), so a scrape taken beside the
 * server's can still hold the count from before the last client arrived. Each comparison
 * is therefore bracketed: the server holds every client; a request sent through infermeter
 * after that is seen recorded, so the batch the scrape reflects left after the server's
 * sample; the server still holds every client afterwards. No client sends twice, so the
 * server held every client through the whole bracket, and so did infermeter's count, which
 * the scrape must show: in every bracket, not most.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import OpenAI from 'openai';
import { parsePrometheusText, type Sample } from '../../src/lib/prom-text.js';
import { startLlamaServer, startMeter, sum, waitFor, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const CLIENTS = 4;
/**
 * Long enough that the server holds every client for a while (the first one's whole
 * generation, ~0.5 s here): each bracket below takes a few scrapes and one batch.
 */
const MAX_TOKENS = 512;
/**
 * Per request, what the clients' stopwatches hold beyond infermeter's: the hop in, the hop
 * out, and the client's own work. Here four clients, their SSE parsing, infermeter and a
 * sampler share one event loop on a 2-core machine that also runs llama-server, so this is
 * wider than in llama-stream-timing (measured 10-40 ms per request under load).
 */
const CLIENT_OVERHEAD_MS = 60;
/**
 * ...plus, at each end of each request, the longest the shared loop stalled during the run
 * (measured, not assumed): a stall delays the proxy's t0 after the client's start, or the
 * client's read after the proxy's first-token stamp, and on a busy machine it is the stall
 * that grows, not infermeter's arithmetic.
 */
const STALLS_PER_REQUEST = 2;

withLlama('under queueing infermeter\'s TTFT rises and its in-flight gauge counts the waiting requests', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  let client: OpenAI;
  let sent = 0;
  before(async () => {
    // llama-server serves HTTP with max(--parallel + 2, cores - 1) threads: 3 on a 2-core
    // machine, fewer than 4 streaming clients and the sampler's scrapes, so a client could wait
    // in its HTTP layer, where requests_deferred does not count it. Enough threads for all.
    llama = await startLlamaServer(engine, { parallel: 1, extra: ['--threads-http', String(CLIENTS + 4)] });
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
    const server = async () => {
      const theirs = parsePrometheusText(await (await fetch(`${llama.url}/metrics`)).text()).samples;
      return { processing: sum(theirs, 'llamacpp:requests_processing'), deferred: sum(theirs, 'llamacpp:requests_deferred') };
    };
    const held = (g: { processing: number; deferred: number }) => g.processing + g.deferred === CLIENTS;
    const modelsRecorded = (s: Sample[]) => sum(s, 'infermeter_requests_total', { route: 'models' });
    let markers = modelsRecorded(before);
    let sampling = true;
    const gauges: { inFlight: number; processing: number; deferred: number }[] = [];
    const brackets: { inFlight: number; processing: number; deferred: number }[] = [];
    const sampler = (async () => {
      while (sampling) {
        const first = await server();
        if (!held(first)) {
          gauges.push({ inFlight: sum(await meter.scrape(), 'infermeter_requests_in_flight'), ...first });
          continue;
        }
        // A marker request through infermeter, then a scrape that holds its record: that
        // scrape's batch left infermeter's loop after the server's sample above.
        await (await fetch(`${meter.url}/v1/models`)).arrayBuffer();
        sent++;
        const mine = await waitFor('the marker request recorded', async () => {
          const s = await meter.scrape();
          return modelsRecorded(s) > markers ? s : undefined;
        });
        markers = modelsRecorded(mine);
        const inFlight = sum(mine, 'infermeter_requests_in_flight');
        gauges.push({ inFlight, ...first });
        const last = await server();
        if (held(last)) brackets.push({ inFlight, ...last });
      }
    })();
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const results = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => ask(`client ${i}`)));
    loop.disable();
    const stallMs = Math.max(0, loop.max / 1e6 - 10);
    sampling = false;
    await sampler;

    const after: Sample[] = await meter.settled(sent);
    const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
    const meterTtftSum = (sum(after, 'gen_ai_server_time_to_first_token_seconds_sum') - sum(before, 'gen_ai_server_time_to_first_token_seconds_sum')) * 1000;
    const clientTtftSum = ttfts.reduce((a, b) => a + b, 0);
    console.log(`# alone: ttft ${alone.ttft.toFixed(1)} ms, e2e ${alone.e2e.toFixed(1)} ms; queued client TTFTs ${ttfts.map((t) => t.toFixed(1)).join(', ')} ms; `
      + `sum client ${clientTtftSum.toFixed(1)} ms, infermeter ${meterTtftSum.toFixed(1)} ms`);
    console.log(`# gauges sampled (in-flight/processing/deferred): ${gauges.map((g) => `${g.inFlight}/${g.processing}/${g.deferred}`).join(' ')}`);
    console.log(`# bracketed (in-flight/processing/deferred): ${brackets.map((g) => `${g.inFlight}/${g.processing}/${g.deferred}`).join(' ')}`);

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
    assert.ok(clientTtftSum - meterTtftSum <= CLIENTS * (CLIENT_OVERHEAD_MS + STALLS_PER_REQUEST * stallMs),
      `sum of TTFT: client ${clientTtftSum.toFixed(1)} vs infermeter ${meterTtftSum.toFixed(1)} ms (longest loop stall ${stallMs.toFixed(1)} ms)`);

    // llama-server counts a request as deferred only once its loop has set it aside, which it
    // may put off while it decodes: its own view can lag too, so the witness is what it reports.
    const full = gauges.filter((g) => g.processing + g.deferred === CLIENTS);
    assert.ok(full.length > 0, 'the server held every client at once (one processing, the rest deferred)');
    assert.ok(full.some((g) => g.processing === 1 && g.deferred === CLIENTS - 1), 'one slot busy, the rest queued');
    assert.ok(brackets.length > 0, 'at least one comparison bracketed by two server samples holding every client');
    const agreeing = brackets.filter((g) => g.inFlight === CLIENTS).length;
    assert.equal(agreeing, brackets.length, `while the server held ${CLIENTS} before and after, infermeter's in-flight gauge said ${CLIENTS} in ${agreeing} of ${brackets.length} brackets`);
    assert.equal(Math.max(...gauges.map((g) => g.inFlight)), CLIENTS, 'the gauge never over-counts');
    assert.equal(sum(after, 'infermeter_requests_in_flight'), 0);
  });
});
