/**
 * npm run bench:scrape — what a scrape and an observation cost the metrics side, text against
 * protobuf, on the usual large registry: 72 models × 7 histogram series (TTFT, TTFO, TPOT, E2E,
 * inter-chunk, input and output tokens) = 504 histogram series, the five latency ones per model
 * native too, each fed 200 requests. Prints CPU ms and bytes per scrape for the text exposition
 * (what every scraper got before) and the protobuf one (classic + native buckets), and the cost
 * of one observation: prom-client's Histogram, the classic series RequestMetrics records into
 * (histogram.ts), the native series, and a whole RequestMetrics.record (both kinds, counters
 * and SLO judging). Medians of BENCH_ROUNDS (default 7) rounds. The proxy thread does none of
 * this: it hands records over, unchanged.
 */
import { Histogram, Registry } from 'prom-client';
import { SeriesHistogram } from '../src/metrics/histogram.js';
import { DEFAULT_BUCKETS, type BucketSet } from '../src/lib/metric-def.js';
import { RequestMetrics } from '../src/metrics/prometheus.js';
import { judgeBatch } from '../src/metrics/batch.js';
import { encodeRegistry } from '../src/exporters/prometheus/proto.js';
import { DEFAULT_NATIVE, NativeSeries } from '../src/metrics/native.js';
import { UNMEASURED, type RequestRecord } from '../src/record/record.js';
import { parseSloConfig } from '../src/slo/config.js';
import { mulberry32 } from '../src/lib/prng.js';
import { percentile, sorted } from './lib.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const MODELS = 72;
const REQUESTS_PER_MODEL = 200;
const SLOS = parseSloConfig({ objective: 0.99, window: '30d', default: { ttft: '2s', tpot: '100ms', e2e: '60s' } }, 'bench');
const buckets = () => Object.fromEntries(Object.entries(DEFAULT_BUCKETS).map(([k, v]) => [k, [...v]])) as Record<BucketSet, number[]>;

const rand = mulberry32(1);
const lognormal = (median: number, sigma: number) => median * Math.exp(sigma * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()));

function record(model: number): RequestRecord {
  const ttft = lognormal(0.186, 0.5);
  const tokens = 64 + Math.floor(rand() * 192);
  const tpot = lognormal(0.03, 0.35);
  const gaps = new Float32Array(16).map(() => lognormal(0.03, 0.35));
  return {
    ...UNMEASURED, startedAt: Date.now(),
    route: 'chat_completions', operation: 'chat', model: `bench-model-${model}`, outcome: 'ok', status: 200, streamed: true,
    ttft, ttfo: ttft, e2e: ttft + tpot * (tokens - 1), inputTokens: 200 + Math.floor(rand() * 2000), outputTokens: tokens,
    tokenSource: 'usage', chunkGaps: gaps, meteringFailure: null, errorType: null,
  };
}

/** Median over ROUNDS of the CPU ms (user + system) that `fn` takes per call, each round ≥ 200 ms. */
async function cpuMsPerCall(fn: () => Promise<unknown> | unknown): Promise<number> {
  let n = 1;
  for (let t = 0; t < 200; n *= 2) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    t = (c.user + c.system) / 1000;
  }
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    rounds.push((c.user + c.system) / 1000 / n);
  }
  return percentile(sorted(rounds), 50);
}

const registry = new Registry();
const metrics = new RequestMetrics(registry, buckets(), 'vllm', SLOS);
/** One record as the metrics side hands it over: labelled and judged (judgeBatch), then recorded. */
const ingest = (r: RequestRecord) => metrics.ingest(judgeBatch([r], 0, SLOS, (m) => m));
for (let i = 0; i < REQUESTS_PER_MODEL; i++) for (let m = 0; m < MODELS; m++) ingest(record(m));

const text = await registry.metrics();
const proto = await encodeRegistry(registry);
const histogramSeries = (text.match(/_count\{/g) ?? []).length;
const textMs = await cpuMsPerCall(() => registry.metrics());
const protoMs = await cpuMsPerCall(() => encodeRegistry(registry));

// One observation: a prom-client histogram with the same labels, a native series, a whole record.
const values = Float64Array.from({ length: 4096 }, () => lognormal(0.186, 0.5));
const classic = new Histogram({ name: 'bench_seconds', help: 'bench', labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'], buckets: [...DEFAULT_BUCKETS.ttft], registers: [] });
const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'vllm', gen_ai_request_model: 'bench-model-1' };
const series = new SeriesHistogram('bench_series_seconds', 'bench', Object.keys(labels), [...DEFAULT_BUCKETS.ttft], new Registry()).labels(labels);
const native = new NativeSeries({ ...DEFAULT_NATIVE, schema: 3 });
let k = 0;
const classicUs = (await cpuMsPerCall(() => { for (let i = 0; i < 1000; i++) classic.observe(labels, values[k++ & 4095]!); })) ;
const seriesUs = (await cpuMsPerCall(() => { for (let i = 0; i < 1000; i++) series.observe(values[k++ & 4095]!); })) ;
const nativeUs = (await cpuMsPerCall(() => { for (let i = 0; i < 1000; i++) native.observe(values[k++ & 4095]!); }));
const records = Array.from({ length: 1024 }, (_, i) => record(i % MODELS));
const recordUs = (await cpuMsPerCall(() => { for (let i = 0; i < 100; i++) ingest(records[k++ & 1023]!); })) * 10;

const kb = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
console.log(`bench:scrape — ${histogramSeries} histogram series (${MODELS} models), ${registry.getMetricsAsArray().length} families; CPU medians of ${ROUNDS} rounds\n`);
console.log('exposition                              | CPU ms / scrape | bytes / scrape');
console.log('----------------------------------------|-----------------|---------------');
console.log(`text 0.0.4 (classic buckets)            | ${textMs.toFixed(1).padStart(15)} | ${kb(Buffer.byteLength(text)).padStart(13)}`);
console.log(`protobuf delimited (classic + native)   | ${protoMs.toFixed(1).padStart(15)} | ${kb(proto.length).padStart(13)}`);
console.log(`ratio protobuf / text                   | ${(protoMs / textMs).toFixed(2).padStart(15)} | ${(proto.length / Buffer.byteLength(text)).toFixed(2).padStart(13)}`);
console.log('\nmetrics side, per observation (µs CPU)');
console.log(`prom-client Histogram.observe (labels)   ${classicUs.toFixed(3)}`);
console.log(`classic series (histogram.ts).observe    ${seriesUs.toFixed(3)}  (what RequestMetrics records into)`);
console.log(`native series.observe                    ${nativeUs.toFixed(3)}`);
console.log(`RequestMetrics.record, one whole request ${recordUs.toFixed(1)} (5 latency + 16 chunk-gap observations, both kinds, counters, SLOs)`);
