/**
 * Real engine: `bench --replay` against llama-server gives every request the recorded input
 * length, to the token, on all four APIs, streamed and not: the calibration measures the chat
 * template (and the BOS token) on the engine's own usage, and the replay's one-token words are
 * one token each in its SentencePiece vocabulary. Output lengths follow max_tokens with
 * ignore_eos.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../../src/bench/run.js';
import { resolveBenchOptions } from '../../src/bench/options.js';
import { startLlamaServer, withLlama, type LlamaServer } from './llama-harness.js';

withLlama('bench --replay against llama-server: recorded input lengths to the token on every API', (engine) => {
  let llama: LlamaServer;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 2, ctx: 4096 });
  });
  after(async () => {
    await llama?.close();
  });

  test('each replayed prompt is as long as recorded, by the engine\'s own count', { timeout: 120_000 }, async () => {
    const apis = ['chat', 'completions', 'messages', 'responses'];
    const lines = apis.flatMap((api, i) => [true, false].map((stream, j) => ({
      timestamp: i * 200 + j * 100, input_length: 300 + 170 * i + 61 * j, output_length: 4, hash_ids: [7], api, stream, model: 'prod',
    })));
    const trace = join(mkdtempSync(join(tmpdir(), 'llama-replay-')), 't.jsonl');
    writeFileSync(trace, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    writeFileSync(`${trace}.meta.json`, JSON.stringify({ format: 'infermeter-workload-trace', format_version: 1, block_size: 256 }));
    const report = await runBench(resolveBenchOptions({
      target: llama.url, route: 'completion', inputTokens: '512', outputTokens: '128', warmup: '1', requests: '0', duration: '60s', arrivals: 'poisson',
      seed: '1', nvidiaSmi: 'none', sampleInterval: '500ms', replay: [trace], replayModel: ['prod=tiny-llama'],
    }, ['test']));
    const samples = report.steps[0]!.requests;
    assert.equal(report.steps[0]!.summary.ok, 8, JSON.stringify(samples.map((s) => s.error)));
    for (const s of samples) {
      assert.equal(s.promptTokens, s.replay!.inputLength, `${s.replay!.api} stream=${s.replay!.stream}`);
      assert.equal(s.outputTokens, 4);
    }
    for (const c of report.replay!.calibration!) assert.equal(c.tokensPerWord, 1, `${c.api}: one token per word`);
    assert.equal(report.replay!.ignoreEos, true);
  });
});
