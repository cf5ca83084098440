/**
 * The demo's live line: what the load offered, sent over the last interval and has in flight
 * (the load's own counts), then what infermeter saw: requests done, TTFT and TPOT, the KV
 * cache and the GPUs.
 * Percentiles come from the native histograms (the protobuf exposition, as a Prometheus with
 * native histograms scrapes it), never from classic-bucket interpolation. Lines print in the
 * order asked, each over the interval since the one before.
 */
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { sumSamples, type Sample } from '../lib/prom-text.js';
import { decodeMetricFamilies, PROTOBUF_CONTENT_TYPE, type DecodedFamily } from '../exporters/prometheus/proto.js';
import { nativeCounts, nativeQuantileOfDelta } from './native-quantile.js';
import type { DemoLoad } from './load.js';

const TTFT = 'gen_ai_server_time_to_first_token_seconds';
const TPOT = 'gen_ai_server_time_per_output_token_seconds';

export class LiveLine {
  private before: DecodedFamily[] = [];
  private lastAt: number;
  private scrapedAt: number;
  private lastSent = 0;
  private queue: Promise<void> = Promise.resolve();

  /** startAt: when the load started (performance.now()); the first line covers the time since. */
  constructor(private readonly metricsUrl: string, private readonly load: DemoLoad, startAt: number) {
    this.lastAt = startAt;
    this.scrapedAt = startAt;
  }

  /** Prints one line headed by `label` ("offered 2 req/s", "draining"); resolves once printed. */
  print(label: string): Promise<void> {
    const now = performance.now();
    const seconds = Math.max((now - this.lastAt) / 1000, 1e-3);
    const sent = this.load.sent - this.lastSent;
    const inFlight = this.load.inFlight;
    this.lastAt = now;
    this.lastSent = this.load.sent;
    this.queue = this.queue.then(() => this.scrapeAndPrint(`${label} | sent ${(sent / seconds).toFixed(1)} req/s | in flight ${inFlight}`)).catch(() => undefined);
    return this.queue;
  }

  /** "done" is over the time between two scrapes, which a failed scrape does not break. */
  private async scrapeAndPrint(head: string): Promise<void> {
    const at = performance.now();
    const res = await request(this.metricsUrl, { headers: { accept: PROTOBUF_CONTENT_TYPE } });
    const now = decodeMetricFamilies(new Uint8Array(await res.body.arrayBuffer()));
    const seconds = Math.max((at - this.scrapedAt) / 1000, 1e-3);
    const samples = samplesOf(now);
    const before = this.before;
    const done = sumSamples(samples, 'infermeter_requests_total') - sumSamples(samplesOf(before), 'infermeter_requests_total');
    const q = (name: string, p: number) => nativeQuantileOfDelta(p, nativeCounts(now, name), nativeCounts(before, name));
    const ms = (v: number | null) => (v === null ? '   -' : `${(v * 1000).toFixed(0).padStart(4)}`);
    const kv = sumSamples(samples, 'infermeter_engine_kv_cache_usage_ratio');
    const gpu = samples.filter((s) => s.name === 'infermeter_gpu_sm_utilization_ratio').map((s) => `${(s.value * 100).toFixed(0)}%`).join('/') || '-';
    this.before = now;
    this.scrapedAt = at;
    console.log(
      `[${new Date().toISOString().slice(11, 19)}] ${head} | done ${(done / seconds).toFixed(1)} req/s | TTFT p50/p99 ${ms(q(TTFT, 0.5))}/${ms(q(TTFT, 0.99))} ms | TPOT p50/p99 ${ms(q(TPOT, 0.5))}/${ms(q(TPOT, 0.99))} ms | KV ${(kv * 100).toFixed(0)}% | GPU sm ${gpu}`,
    );
  }
}

/** Counter and gauge values of decoded families, as text-format samples. */
function samplesOf(families: readonly DecodedFamily[]): Sample[] {
  const out: Sample[] = [];
  for (const f of families) {
    for (const m of f.metric) {
      const value = m.counter?.value ?? m.gauge?.value;
      if (value === undefined) continue;
      out.push({ name: f.name, labels: Object.fromEntries((m.label ?? []).map((p) => [p.name, p.value])), value });
    }
  }
  return out;
}
