// test-group: alone (the estimate is read from latencies: another test's CPU would move them)
/**
 * Headroom through real sockets (headroom-harness.ts), the decode regime: many short prompts,
 * each sequence slowing every step; the live estimate at 60 % of the knee names decode, within
 * the short window's bound. The live path (judged batches → the consumer → /api/v1/status) for
 * one regime; every regime's estimate at 50 % and 70 % is replayed from recorded runs in
 * test/unit/metrics/headroom-regimes-replay.test.ts and measured anew by `npm run bench:headroom`.
 */
import { test } from 'node:test';
import { checkAccuracy } from './headroom-harness.js';

test('headroom, decode: the live estimate at 60 % of the measured knee is within the bound, naming decode', { timeout: 120_000 }, async () => {
  // Speed 4: a 20 s window is 80 simulated seconds, about 115 requests at 60 % of 2.41 req/s.
  await checkAccuracy('decode', { limits: ['decode'], speed: 4, window: 20, shares: [0.6] });
});
