// test-group: alone (the engine's slot must come free within a deadline)
/**
 * Real engine: a client that leaves mid-generation frees the server's slot promptly.
 * infermeter aborts the upstream request at once; llama-server notices the closed
 * connection and stops decoding for nobody. The slot (GET /slots) and the server's own
 * gauge (llamacpp:requests_processing) must be idle within a second of the client leaving,
 * long before the generation would have finished by itself.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { sleep, startLlamaServer, startMeter, sum, waitFor, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const MAX_TOKENS = 1800;
const IDLE_WITHIN_MS = 1000;

interface Slot { id: number; is_processing: boolean }

withLlama('a client that disconnects mid-generation frees the server slot within a second', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1, ctx: 2048 });
    meter = await startMeter(llama.url);
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  const busySlots = async () => ((await (await fetch(`${llama.url}/slots`)).json()) as Slot[]).filter((s) => s.is_processing).length;
  const serverMetrics = async () => parsePrometheusText(await (await fetch(`${llama.url}/metrics`)).text()).samples;

  for (const route of ['chat/completions', 'completions'] as const) {
    test(`${route}: slot idle within ${IDLE_WITHIN_MS} ms of the client leaving`, async () => {
      const before = await serverMetrics();
      const beforeMeter = await meter.scrape();
      const abort = new AbortController();
      const payload = route === 'completions'
        ? { model: 'tiny-llama', prompt: 'Go on forever.', stream: true, max_tokens: MAX_TOKENS }
        : { model: 'tiny-llama', messages: [{ role: 'user', content: 'Go on forever.' }], stream: true, max_tokens: MAX_TOKENS };
      const res = await fetch(`${meter.url}/v1/${route}`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), signal: abort.signal,
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let received = 0;
      while (received < 2048) received += (await reader.read()).value?.length ?? 0; // a dozen chunks in
      assert.equal(await busySlots(), 1, 'the slot is generating');
      const left = performance.now();
      abort.abort();
      await reader.cancel().catch(() => undefined);
      const idleAfter = await waitFor('the slot to go idle', async () => ((await busySlots()) === 0 ? performance.now() - left : undefined), 10_000, 10);
      const m = await serverMetrics();
      const predicted = sum(m, 'llamacpp:tokens_predicted_total') - sum(before, 'llamacpp:tokens_predicted_total');
      console.log(`# ${route}: slot idle ${idleAfter.toFixed(0)} ms after the client left; the server generated ${predicted} of ${MAX_TOKENS} tokens`);
      assert.ok(idleAfter <= IDLE_WITHIN_MS, `slot idle after ${idleAfter.toFixed(0)} ms`);
      assert.equal(sum(m, 'llamacpp:requests_processing'), 0, 'llamacpp:requests_processing is 0');
      assert.ok(predicted < MAX_TOKENS / 2, `generation stopped early (${predicted} of ${MAX_TOKENS} tokens)`);
      const after = await waitFor('client_abort in /metrics', async () => {
        const s = await meter.scrape();
        return sum(s, 'infermeter_requests_total', { outcome: 'client_abort' }) > sum(beforeMeter, 'infermeter_requests_total', { outcome: 'client_abort' }) ? s : undefined;
      });
      assert.equal(sum(after, 'infermeter_requests_in_flight'), 0);
      await sleep(50);
    });
  }
});
