/**
 * A typo in `slos:` gets the "did you mean" that a typo among the file's top-level keys gets
 * (config/file.ts): under `slos:` itself, under `slos.default`, a model's entry and a prompt class.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSloConfig } from '../../../src/slo/config.js';

function message(raw: unknown): string {
  try {
    parseSloConfig(raw, 'slos');
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail('no error');
}

test('unknown keys under slos: name the nearest known key at their level', () => {
  assert.equal(message({ default: { ttf: '1s' } }), 'slos.default: unknown key(s): ttf (expected ttft, ttfo, tpot, e2e; ttf: did you mean ttft?)');
  assert.equal(message({ models: { m: { tpt: '50ms' } } }), 'slos.models.m: unknown key(s): tpt (expected ttft, ttfo, tpot, e2e; tpt: did you mean tpot?)');
  assert.equal(message({ prompt_classes: [{ prompt_tokens_le: 100, ttf: '1s' }] }), 'slos.prompt_classes.0: unknown key(s): ttf (expected prompt_tokens_le, ttft, ttfo, tpot, e2e; ttf: did you mean ttft?)');
  assert.equal(message({ objectve: 0.9 }), 'slos: unknown key(s): objectve (expected objective, window, default, models, prompt_classes; objectve: did you mean objective?)');
  assert.equal(message({ default: { latency: '1s' } }), 'slos.default: unknown key(s): latency (expected ttft, ttfo, tpot, e2e)', 'nothing near: no hint');
});
