// test-group: alone (the estimate is read from latencies)
/**
 * Headroom says `unknown`, with the reason, rather than a figure it cannot support, through
 * real sockets: no SLO set, load that never varied (a closed loop of identical requests),
 * and no load (the window has emptied). While unknown, neither series is on /metrics (an
 * alert or an autoscaler reads no guess); with an estimate both are, one series each per
 * model. /api/v1/status stays schema-valid throughout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Agent } from 'undici';
import { runLoad } from '../../src/sim/load.js';
import { spawnSimulator, type SimulatorProcess } from '../../src/sim/child.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape } from '../helpers.js';
import { statusValidator, statusWhen } from './ui-helpers.js';
import { REGIMES } from '../../bench/headroom-regimes.js';
import { MODEL, openLoad } from '../../bench/headroom-run.js';
import type { StatusDocument } from '../../src/exporters/ui/status-json.js';
import type { CapacityEstimate } from '../../src/metrics/headroom/estimate.js';

const WINDOW = 10;
const capacityOf = (d: StatusDocument) => d.models.find((m) => m.model === MODEL)?.capacity ?? null;

async function start(sim: SimulatorProcess, slos: string | null): Promise<{ d: InfermeterProcess; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'headroom-unknown-'));
  const args = ['--engine-interval', '0.25s', '--bottleneck-interval', '0.5s', '--headroom-window', `${WINDOW}s`, '--no-collector.engine'];
  if (slos) {
    writeFileSync(join(dir, 'config.yaml'), `slos:\n  default:\n${slos}`);
    args.push('--config', join(dir, 'config.yaml'));
  }
  const d = InfermeterProcess.forUpstream(sim.url, args, {});
  await d.start();
  return { d, dir };
}

/** The two series of MODEL on /metrics, by name. */
async function series(base: string): Promise<Map<string, number>> {
  const { samples } = await scrape(`${base}/metrics`);
  return new Map(samples.filter((s) => SERIES.includes(s.name) && s.labels['gen_ai_request_model'] === MODEL).map((s) => [s.name, s.value]));
}
const SERIES = ['infermeter_capacity_requests_per_second', 'infermeter_load_ratio'];

/**
 * Waits for a capacity that `pred` accepts, then scrapes the series between two status reads
 * of that same estimate (every figure equal): the estimate is refitted every
 * --bottleneck-interval, so a scrape compares like with like only inside one evaluation.
 */
async function agreeing(base: string, pred: (c: CapacityEstimate) => boolean, timeoutMs: number): Promise<{ doc: StatusDocument; c: CapacityEstimate; s: Map<string, number> }> {
  const deadline = Date.now() + timeoutMs;
  let last: CapacityEstimate | null = null;
  for (;;) {
    const doc = await statusWhen(base, () => true);
    last = capacityOf(doc);
    if (last !== null && pred(last)) {
      const s = await series(base);
      if (isDeepStrictEqual(capacityOf(await statusWhen(base, () => true)), last)) return { doc, c: last, s };
    }
    if (Date.now() > deadline) throw new Error(`no agreeing capacity in ${timeoutMs} ms; the last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('headroom is unknown without an SLO, while the load has not varied, and under no load; the series come and go with the estimate', { timeout: 150_000 }, async () => {
  const regime = REGIMES.find((r) => r.name === 'decode')!;
  const sim = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', MODEL, '--speed', '4', ...regime.sim]);
  const validate = statusValidator();
  try {
    // 1. No SLO: nothing to break.
    {
      const { d, dir } = await start(sim, null);
      try {
        const load = openLoad(d.proxyUrl, regime, 4, 6000, 1);
        const { doc, c, s } = await agreeing(d.metricsUrl, () => true, 20_000);
        assert.ok(validate(doc), JSON.stringify(validate.errors));
        assert.deepEqual([c.state, c.reason, c.requestsPerSecond, c.loadRatio], ['unknown', 'no_slo', null, null], c.summary);
        assert.deepEqual([...s.keys()], []);
        load.stop();
        await load.done;
      } finally {
        await d.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const { d, dir } = await start(sim, '    tpot: 0.045s\n    ttft: 0.5s\n');
    try {
      // 2. A closed loop of 6 identical requests: the decode batch never varies.
      const agent = new Agent({ connections: null });
      let stop = false;
      const loops = Array.from({ length: 6 }, async () => {
        while (!stop) await runLoad({ url: d.proxyUrl, model: MODEL, route: 'chat', requests: 1, maxTokens: 40, prompt: 'the same short prompt', dispatcher: agent });
      });
      const flat = await agreeing(d.metricsUrl, (c) => c.reason === 'load_not_varied', 40_000);
      assert.ok(validate(flat.doc), JSON.stringify(validate.errors));
      assert.match(flat.c.summary, /too little load variation/);
      assert.deepEqual([...flat.s.keys()], []);
      stop = true;
      await Promise.all(loops);
      await agent.close();
      // 3. Poisson load of the mix: an estimate, and its two series...
      const load = openLoad(d.proxyUrl, regime, 6, 16_000, 2);
      const known = await agreeing(d.metricsUrl, (c) => c.state === 'estimate', 40_000);
      assert.ok(validate(known.doc), JSON.stringify(validate.errors));
      const c = known.c;
      assert.ok(c.requestsPerSecond! > 0 && c.loadRatio! > 0 && c.bindingSlo !== null && c.bindingLimit !== null, JSON.stringify(c));
      assert.deepEqual(Object.fromEntries(known.s), { infermeter_capacity_requests_per_second: c.requestsPerSecond, infermeter_load_ratio: c.loadRatio });
      load.stop();
      await load.done;
      // ...then none: the window empties, the estimate is unknown for want of load, and the series leave.
      const idle = await agreeing(d.metricsUrl, (x) => x.reason === 'no_load', (WINDOW + 15) * 1000);
      assert.ok(validate(idle.doc), JSON.stringify(validate.errors));
      assert.deepEqual([...idle.s.keys()], []);
    } finally {
      await d.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await sim.close();
  }
});
