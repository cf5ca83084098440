/**
 * A collector whose source has not answered yet (`starting`: dmon's first sample) is no warning
 * at start (the demo printed "nvidia-smi dmon has not printed a sample yet" as a raw JSON warn
 * line); one still starting after STARTING_RUNS runs is, once. Real timers, a real registry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Registry } from 'prom-client';
import { CollectorRunner, STARTING_RUNS } from '../../../src/collectors/runner.js';
import { CollectorError, type CollectorEntry, type CollectorOptions } from '../../../src/collectors/types.js';

function entry(name: string, startingRuns: number, runs: { n: number }): CollectorEntry {
  return {
    name, interval: () => 0.02, enabled: () => true,
    create: () => ({
      name,
      collect: async () => {
        if (runs.n++ < startingRuns) throw new CollectorError('starting', 'nvidia-smi dmon has not printed a sample yet');
      },
    }),
  };
}

async function logsOf(startingRuns: number, until: number): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const runner = new CollectorRunner(new Registry(), {} as CollectorOptions, log);
  const runs = { n: 0 };
  runner.start([entry('gpu', startingRuns, runs)]);
  const deadline = Date.now() + 10_000;
  while (runs.n < until && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await runner.close();
  assert.ok(runs.n >= until, `${runs.n} runs`);
  return lines;
}

test('starting for fewer than STARTING_RUNS runs, then a sample: no warning, no recovery line', async () => {
  const lines = await logsOf(STARTING_RUNS - 1, STARTING_RUNS + 2);
  assert.deepEqual(lines.map((l) => l['msg']), []);
});

test('still starting after STARTING_RUNS runs: one warning', async () => {
  const lines = await logsOf(1000, STARTING_RUNS + 3);
  assert.deepEqual(lines.map((l) => [l['msg'], l['kind']]), [['collector failed; will keep trying', 'starting']]);
});
