/** Headroom, decode regime through real sockets (headroom-harness.ts): many short prompts, each sequence slowing every step: the estimate names decode. */
import { test } from 'node:test';
import { checkAccuracy } from './headroom-harness.js';

test('headroom, decode: the live estimate at 50 % and 70 % of the measured knee is within the bound', { timeout: 150_000 }, async () => {
  await checkAccuracy('decode', { limits: ['decode'] });
});
