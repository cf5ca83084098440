/**
 * Several upstreams on the status page's state (fake clock, a machine snapshot filled as the
 * engine collector and the runner fill it): `.collectors` has a row per collector instance,
 * the engine collector's named by upstream; `.engines` has one entry per upstream in
 * configured order, a dead one kept, down, with no figures; each engine's preemptions and
 * prefix-cache ratio come from its own counters, so one engine that dies moves no other's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusState } from '../../../src/exporters/ui/state.js';
import { ALL_MODELS, buildStatus } from '../../../src/exporters/ui/status-json.js';
import { MachineSnapshot, type CollectorHealth } from '../../../src/collectors/snapshot.js';
import { engineReading } from '../../../src/collectors/engine/reading.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { statusValidator } from '../../integration/ui-helpers.js';

const slos = parseSloConfig({ objective: 0.99, default: { ttft: '500ms' } }, 'test');

interface Counters {
  running: number;
  kv: number;
  preemptions: number;
  hits: number;
  queries: number;
}

function engine(machine: MachineSnapshot, upstream: string, c: Counters, at: number): void {
  machine.setEngine({
    ...engineReading(new Map(), upstream, 'vllm', at),
    running: c.running, waiting: 0, kvCacheUsage: c.kv, preemptionsTotal: c.preemptions, prefixCacheHitsTotal: c.hits, prefixCacheQueriesTotal: c.queries,
  });
}

function health(machine: MachineSnapshot, collector: string, upstream: string | null, up: boolean, at: number): void {
  const h: CollectorHealth = { collector, upstream, up, lastSuccessAt: up ? at : null, durationSeconds: 0.001, at };
  machine.setHealth(h);
}

test('two upstreams, one dead: a collector row per instance, an engine entry per upstream, each engine\'s rates its own', async () => {
  let now = 1_700_000_000_000;
  const machine = new MachineSnapshot();
  const state = new StatusState({ slos, machine, now: () => now });
  // As the runner starts them: the host collector, then the engine collector once per upstream.
  const publish = (aUp: boolean, i: number) => {
    health(machine, 'host', null, true, now);
    health(machine, 'engine', 'llama2-a', aUp, now);
    health(machine, 'engine', 'llama3-b', true, now);
    if (aUp) engine(machine, 'llama2-a', { running: 3, kv: 0.5, preemptions: 10 * i, hits: 50 * i, queries: 100 * i }, now);
    else machine.removeEngine('llama2-a');
    engine(machine, 'llama3-b', { running: 1, kv: 0.1, preemptions: 1000 + i, hits: 90 * i, queries: 100 * i }, now);
  };
  // Two minutes of both engines, a reading every 10 s.
  for (let i = 0; i <= 12; i++) {
    publish(true, i);
    await state.tick();
    now += 10_000;
  }
  const validate = statusValidator();
  const both = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  assert.ok(validate(both), JSON.stringify(validate.errors));
  assert.deepEqual(both.collectors.map((c) => [c.name, c.upstream, c.up]), [['engine', 'llama2-a', true], ['engine', 'llama3-b', true], ['host', null, true]]);
  assert.deepEqual(both.engines.map((e) => [e.upstream, e.engine, e.up, e.running]), [['llama2-a', 'vllm', true, 3], ['llama3-b', 'vllm', true, 1]]);
  const [a, b] = both.engines;
  // Each engine's increase over the last 5 minutes of its own counters (12 readings 10 s apart).
  assert.equal(a!.preemptions5m, 120);
  assert.equal(b!.preemptions5m, 12);
  assert.equal(a!.prefixCacheHitRatio, 0.5);
  assert.equal(b!.prefixCacheHitRatio, 0.9);
  assert.equal(both.engine!.running, 4, 'every engine together: counts add up');
  assert.equal(both.engine!.kvCacheUsage, 0.3, 'every engine together: the mean ratio');
  assert.equal(both.engine!.preemptions5m, 132);
  assert.equal(both.engine!.prefixCacheHitRatio, 0.7);

  // llama2-a dies: its collector row is down under its name, its entry stays with no figures.
  publish(false, 13);
  await state.tick();
  const dead = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  assert.ok(validate(dead), JSON.stringify(validate.errors));
  assert.deepEqual(dead.collectors.map((c) => [c.name, c.upstream, c.up]), [['engine', 'llama2-a', false], ['engine', 'llama3-b', true], ['host', null, true]]);
  assert.deepEqual(dead.engines[0], { upstream: 'llama2-a', engine: 'vllm', up: false, kvCacheUsage: null, running: null, waiting: null, preemptions5m: null, prefixCacheHitRatio: null });
  assert.deepEqual(dead.engines.map((e) => e.upstream), ['llama2-a', 'llama3-b']);
  // The live engine's rates are its own: the dead one's counters leaving does not read as a reset.
  assert.equal(dead.engines[1]!.preemptions5m, 13);
  assert.equal(dead.engine!.running, 1);
  assert.equal(dead.engine!.preemptions5m, 13, 'every engine together: only the live one\'s increase');
});

test('one upstream: one engine entry under its name, no upstream on the other collectors', async () => {
  const now = 1_700_000_000_000;
  const machine = new MachineSnapshot();
  const state = new StatusState({ slos, machine, now: () => now });
  health(machine, 'gpu', null, false, now);
  health(machine, 'engine', '127.0.0.1:8000', true, now);
  engine(machine, '127.0.0.1:8000', { running: 2, kv: 0.25, preemptions: 0, hits: 0, queries: 0 }, now);
  await state.tick();
  const doc = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  assert.deepEqual(doc.collectors.map((c) => [c.name, c.upstream, c.up]), [['engine', '127.0.0.1:8000', true], ['gpu', null, false]]);
  assert.deepEqual(doc.engines.map((e) => [e.upstream, e.up, e.running, e.kvCacheUsage]), [['127.0.0.1:8000', true, 2, 0.25]]);
  assert.deepEqual({ running: doc.engine!.running, kv: doc.engine!.kvCacheUsage }, { running: 2, kv: 0.25 });
});
