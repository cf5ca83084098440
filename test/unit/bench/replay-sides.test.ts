/**
 * The replay report's prefix-cache row compares like with like (src/bench/replay/sides.ts and
 * render.ts): the recorded share is shown only when every line carries `cached_input_tokens`
 * (the replayed side counts every request), and the trace's own upper bound stands beside it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTrace } from '../../../src/bench/replay/trace.js';
import { buildWorkload } from '../../../src/bench/replay/workload.js';
import { recordedSide } from '../../../src/bench/replay/sides.js';
import { prefixCacheRows } from '../../../src/bench/replay/render.js';

function workload(cachedOn: (i: number) => number | null) {
  const lines = Array.from({ length: 60 }, (_, i) => {
    const cached = cachedOn(i);
    return JSON.stringify({ timestamp: i * 100, input_length: 100, output_length: 4, hash_ids: [], ...(cached === null ? {} : { cached_input_tokens: cached }) });
  });
  return buildWorkload([parseTrace(lines.join('\n'), 't.jsonl')], 1, new Map());
}

test('12 of 60 lines with cached_input_tokens: no recorded share, the row says why', () => {
  // What a new user saw: "0.0 % recorded (cached_input_tokens of 12/60 lines) | 89.6 % replayed".
  const side = recordedSide(workload((i) => (i < 12 ? 0 : null)), {});
  assert.equal(side.prefixCacheHitRatio, null);
  assert.match(side.prefixCacheFrom!, /on 12 of 60 lines only: not comparable/);
  const rows = prefixCacheRows(side, { ...side, prefixCacheHitRatio: 0.896, prefixCacheFrom: 'the engine\'s prefix-cache counters over the replay' }, 0.967);
  assert.deepEqual(rows, [
    '| prefix-cache hits (share of prompt tokens) | – (cached_input_tokens on 12 of 60 lines only: not comparable; those both runs report are compared below) | 89.6% (the engine\'s prefix-cache counters over the replay) |',
    '| upper bound: an unbounded cache over the trace\'s hash ids | 96.7% | 96.7% |',
  ]);
});

test('every line with cached_input_tokens: the recorded share over all of them', () => {
  const side = recordedSide(workload((i) => (i % 2 ? 50 : 0)), {});
  assert.equal(side.prefixCacheHitRatio, 0.25);
  assert.equal(side.prefixCacheFrom, 'cached_input_tokens of all 60 lines');
  assert.match(prefixCacheRows(side, side, null)[1]!, /\| – \| – \|$/);
});

test('no line with cached_input_tokens: nothing recorded, nothing said', () => {
  const side = recordedSide(workload(() => null), {});
  assert.deepEqual([side.prefixCacheHitRatio, side.prefixCacheFrom], [null, null]);
});
