/** Headroom, kv_cache regime through real sockets (headroom-harness.ts): long prompts and outputs in a small KV cache: the estimate names the KV cache (or the decode batch it caps). */
import { test } from 'node:test';
import { checkAccuracy } from './headroom-harness.js';

test('headroom, kv_cache: the live estimate at 50 % and 70 % of the measured knee is within the bound', { timeout: 150_000 }, async () => {
  // Requests of 10-20 simulated seconds, and a request is usable only a longest E2E away from
  // both ends of the window: at speed 4 a 32 s window is 128 simulated seconds, 30 usable requests and more at 50 %.
  await checkAccuracy('kv_cache', { limits: ['kv_cache', 'decode'], speed: 4, window: 32 });
});
