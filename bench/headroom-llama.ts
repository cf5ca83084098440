/**
 * `npm run bench:headroom-llama` (docs/headroom.md, "Against llama-server"): the headroom
 * check of bench/headroom.ts against the real llama-server with `--parallel 2` (the tiny model
 * `npm run engine:llama` builds, INFERMETER_LLAMA_SERVER / INFERMETER_LLAMA_MODEL): a stepped
 * sweep straight against the server finds the rate at which the P99 TTFT breaks (two slots:
 * requests queue for them), then infermeter in front of a fresh server (--engine llamacpp)
 * reads the live estimate at 30 %, 50 % and 70 % of it. Real time throughout.
 *   HEADROOM_STEP_SECONDS=40  HEADROOM_WINDOW=120  HEADROOM_KNEE=12.5 (skips the sweep)  HEADROOM_OUT=headroom-llama.json
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { findKnee, readLive } from './headroom-run.js';
import type { HeadroomRegime } from './headroom-regimes.js';
import { locateLlama, startLlamaServer } from '../test/integration/llama-harness.js';

/**
 * Outputs of 32-96 tokens: on an idle core the tiny model decodes a token in under 1 ms, on a
 * shared, loaded one ten times that; either way the two slots fill long before the decode
 * step grows, so the TTFT queue binds.
 */
export const LLAMA_REGIME: HeadroomRegime = {
  name: 'llama',
  what: 'llama-server --parallel 2 (tiny model, one thread): two batch slots, requests queue for them',
  model: 'tiny-llama',
  sim: [],
  mix: [{ api: 'chat', weight: 1, prompt: [32, 128], output: [32, 96] }],
  slos: { ttft: 1, tpot: 0.05 },
  sweep: { from: 1, to: 60 },
  knee: 0,
};

const env = (k: string, d: string) => process.env[k] ?? d;
const engine = locateLlama();
if (typeof engine === 'string') throw new Error(engine);
const start = () => startLlamaServer(engine, { parallel: 2, ctx: 2048 });
const stepSeconds = Number(env('HEADROOM_STEP_SECONDS', '40'));
const windowSeconds = Number(env('HEADROOM_WINDOW', '120'));
const pct = (e: number | null) => (e === null ? 'unknown' : `${e >= 0 ? '+' : ''}${(e * 100).toFixed(0)} %`);

console.log(`# headroom against llama-server --parallel 2, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const knee = process.env['HEADROOM_KNEE'] ? Number(process.env['HEADROOM_KNEE']) : (await findKnee(LLAMA_REGIME, 1, stepSeconds, 2, (s) =>
  console.log(`  step ${s.rate.toFixed(2)} req/s: ${s.requests} requests, P99 TTFT ${s.p99.ttft.toFixed(3)} s, TPOT ${s.p99.tpot.toFixed(4)} s, E2E ${s.p99.e2e.toFixed(3)} s${s.broke ? ': broke' : ''}`), start)).knee;
console.log(`llama: the P99 SLOs break at ${knee.toFixed(2)} req/s`);
const reads = await readLive(LLAMA_REGIME, { speed: 1, knee, shares: [0.3, 0.5, 0.7], warmSeconds: windowSeconds + 10, reads: 5, readEvery: 3, windowSeconds, args: ['--engine', 'llamacpp'], start }, (r) =>
  console.log(`  at ${Math.round(r.share * 100)} %: estimate ${r.estimate?.toFixed(2) ?? 'unknown'} req/s (${pct(r.error)}), binding ${r.bindingSlo}/${r.bindingLimit}; reads ${r.estimates.map((e) => e?.toFixed(2) ?? '-').join(' ')} ${r.reasons.join(' ')}`));
console.log(`\n| llama-server --parallel 2 | ${knee.toFixed(2)} | ${reads.map((x) => `${x.estimate?.toFixed(2) ?? 'unknown'} (${pct(x.error)})`).join(' | ')} | ${reads.at(-1)?.bindingSlo}/${reads.at(-1)?.bindingLimit} |`);
writeFileSync(env('HEADROOM_OUT', 'headroom-llama.json'), JSON.stringify({ stepSeconds, windowSeconds, loadavg: loadavg(), knee, reads }, null, 2) + '\n');
