// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * The seed's case study, the knob no longer turned blind: prompts that share a 3,900-token
 * prefix on an engine with prefix caching off and a small chunked-prefill budget. TTFT is
 * prefill; with --prefix-cache the prefill verdict cites what the traffic would reuse, what a
 * cache of the engine's size would, and what the engine delivers (nothing), and its advice
 * leads with the prefix-cache verdict's knob: caching_off, enable prefix caching.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, startRegime } from './bottleneck-harness.js';
import { statusValidator, statusWhen } from './ui-helpers.js';

const SHARED = 'lorem ipsum dolor sit amet '.repeat(600).slice(0, 3900 * 4);

test('prefill on an engine with prefix caching off: the prefix shares are the evidence, caching_off the knob', { timeout: 120_000 }, async () => {
  const r = await startRegime({
    sim: { maxNumBatchedTokens: 128, prefixCaching: false },
    args: ['--bottleneck-window', '8s', '--prefix-cache', 'true', '--prefix-cache-window', '1m'],
    load: { concurrency: 1, maxTokens: 8, prompt: (i) => `${SHARED} request ${i}: summarise.` },
  });
  try {
    const doc = await statusWhen(r.base, (d) => {
      const v = d.models.find((m) => m.model === MODEL)?.bottleneck;
      return v?.kind === 'prefill' && v.advice[0]!.text.startsWith('prefix cache: ');
    }, 90_000);
    const validate = statusValidator();
    assert.ok(validate(doc), JSON.stringify(validate.errors));
    const m = doc.models.find((x) => x.model === MODEL)!;
    const v = m.bottleneck!;
    const ev = (s: string) => v.evidence.find((e) => e.signal === s);
    // Every prompt after the first finds its 3,900 shared tokens in an unbounded cache and in one of the engine's 112,000 tokens alike.
    for (const s of ['prefixReuseTraffic', 'prefixReuseEngineSize']) {
      assert.ok(ev(s)!.value! > 0.85 && ev(s)!.value! < 1, `${s}: ${JSON.stringify(v.evidence)}`);
      assert.equal(ev(s)!.window, '60s');
    }
    assert.equal(ev('prefixReuseDelivered')!.value, 0, 'the engine reuses nothing');
    assert.equal(ev('prefixReuseDelivered')!.basis, 'the engine\'s prefix-cache counters');
    assert.ok(ev('prefillShare')!.value! >= 0.6);
    assert.match(v.advice[0]!.text, /^prefix cache: caching_off: enable prefix caching: --enable-prefix-caching .*; other prefill knobs: --enable-chunked-prefill with a larger --max-num-batched-tokens/);
    // The same figures as the model's own row in the status document.
    assert.equal(m.prefixCache!.verdict!.kind, 'caching_off');
  } finally {
    await r.close();
  }
});
