/** Injected faults look like the real ones: HTTP 500, an {"error":...} event mid-stream, a cut connection. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../src/sim/index.js';
import { runLoad } from '../../src/sim/load.js';
import { chat, post, readEvents, waitFor } from '../helpers/sim.js';

const body = chat('Hello', { max_tokens: 40, ignore_eos: true, stream: true });

it('--error-rate 1 answers 500 in vLLM error shape', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', errorRate: 1 });
  try {
    const res = await post(`${sim.url}/v1/chat/completions`, body);
    assert.equal(res.status, 500);
    assert.deepEqual(Object.keys(JSON.parse(res.text)), ['object', 'message', 'type', 'param', 'code']);
    assert.equal(sim.state().injectedErrors, 1);
  } finally {
    await sim.close();
  }
});

it('--midstream-error-rate 1 ends streams with an error event, then [DONE]', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', midstreamErrorRate: 1 });
  try {
    const events = readEvents((await post(`${sim.url}/v1/chat/completions`, body)).text);
    const errors = events.filter((e) => e.facts.error);
    assert.equal(errors.length, 1);
    assert.equal(events.at(-2), errors[0]);
    assert.equal(events.at(-1)!.data, '[DONE]');
    const tokens = events.filter((e) => e.facts.token).length;
    assert.ok(tokens >= 1 && tokens < 40, `${tokens} tokens`);
    await waitFor(() => sim.state().finished.abort === 1, 'the engine to drop the sequence');
  } finally {
    await sim.close();
  }
});

it('--drop-rate 1 cuts connections mid-stream', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', dropRate: 1 });
  try {
    const run = await runLoad({ url: sim.url, requests: 3, concurrency: 3, maxTokens: 40 });
    for (const r of run.results) {
      assert.equal(r.ok, false);
      assert.ok(r.chunks >= 1 && r.chunks < 40, `${r.chunks} chunks`);
    }
    await waitFor(() => sim.state().running === 0 && sim.state().finished.abort === 3, 'the engine to drop the sequences');
  } finally {
    await sim.close();
  }
});
