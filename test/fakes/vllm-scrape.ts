/**
 * Synthetic scrape in vLLM V1's /metrics format (family names, `engine`/`model_name`
 * labels, `_created` series, vLLM's bucket lists), of about `lines` lines, for load tests
 * and benchmarks ("a 5,000-line engine /metrics scraped every second"). Synthetic: the
 * values are made up; only the shape follows the captured scrapes in test/fixtures/.
 *   node dist/test/fakes/vllm-scrape.js --lines 5000 > /tmp/vllm-5000.prom
 *   node dist/test/fakes/vllm-scrape.js --measure      (median parse+normalize time)
 */
import { pathToFileURL } from 'node:url';

const TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const REQUEST = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const TOKENS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

const GAUGES = [
  ['vllm:num_requests_running', 'Number of requests in model execution batches.'],
  ['vllm:num_requests_waiting', 'Number of requests waiting to be processed.'],
  ['vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.'],
] as const;
const COUNTERS = [
  ['vllm:prefix_cache_queries', 'Prefix cache queries, in terms of number of queried tokens.'],
  ['vllm:prefix_cache_hits', 'Prefix cache hits, in terms of number of cached tokens.'],
  ['vllm:num_preemptions', 'Cumulative number of preemption from the engine.'],
  ['vllm:prompt_tokens', 'Number of prefill tokens processed.'],
  ['vllm:generation_tokens', 'Number of generation tokens processed.'],
] as const;
const HISTOGRAMS = [
  ['vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT],
  ['vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', ITL],
  ['vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST],
  ['vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST],
  ['vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', REQUEST],
  ['vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', REQUEST],
  ['vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', REQUEST],
  ['vllm:request_prompt_tokens', 'Number of prefill tokens processed.', TOKENS],
  ['vllm:request_generation_tokens', 'Number of generation tokens processed.', TOKENS],
] as const;

/** Lines one label set adds across all families (headers excluded). */
const PER_SET = GAUGES.length + COUNTERS.length * 2 + HISTOGRAMS.reduce((n, h) => n + h[2].length + 3 + 1, 0);
const HEADERS = (GAUGES.length + COUNTERS.length * 2 + HISTOGRAMS.length * 2) * 2;

function fmt(v: number): string {
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/** A vLLM-format scrape of roughly `lines` lines (never fewer), deterministic for a seed. */
export function generateVllmScrape(lines = 5000, seed = 1): string {
  const sets = Math.max(1, Math.ceil((lines - HEADERS) / PER_SET));
  const labelSets = Array.from({ length: sets }, (_, i) => `engine="${i}",model_name="meta-llama/Llama-3.1-8B-Instruct"`);
  let x = seed;
  const rand = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
  const out: string[] = [];
  const created = 1.7769301736864316e9;
  for (const [name, help] of GAUGES) {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const l of labelSets) out.push(`${name}{${l}} ${fmt(name.endsWith('perc') ? Math.round(rand() * 1000) / 1000 : Math.floor(rand() * 64))}`);
  }
  for (const [name, help] of COUNTERS) {
    out.push(`# HELP ${name}_total ${help}`, `# TYPE ${name}_total counter`);
    for (const l of labelSets) out.push(`${name}_total{${l}} ${fmt(Math.floor(rand() * 1e7))}`);
    out.push(`# HELP ${name}_created ${help}`, `# TYPE ${name}_created gauge`);
    for (const l of labelSets) out.push(`${name}_created{${l}} ${created}`);
  }
  for (const [name, help, buckets] of HISTOGRAMS) {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    for (const l of labelSets) {
      let cumulative = 0;
      for (const le of buckets) {
        cumulative += Math.floor(rand() * 100);
        out.push(`${name}_bucket{${l},le="${fmt(le)}"} ${fmt(cumulative)}`);
      }
      out.push(`${name}_bucket{${l},le="+Inf"} ${fmt(cumulative)}`);
      out.push(`${name}_count{${l}} ${fmt(cumulative)}`);
      out.push(`${name}_sum{${l}} ${cumulative * 0.731}`);
    }
    out.push(`# HELP ${name}_created ${help}`);
    out.push(`# TYPE ${name}_created gauge`);
    for (const l of labelSets) out.push(`${name}_created{${l}} ${created}`);
  }
  return out.join('\n') + '\n';
}

async function main(argv: string[]): Promise<void> {
  const i = argv.indexOf('--lines');
  const lines = i >= 0 ? Number(argv[i + 1]) : 5000;
  const text = generateVllmScrape(lines);
  if (!argv.includes('--measure')) {
    process.stdout.write(text);
    return;
  }
  const { normalizeScrape } = await import('../../src/collectors/engine/collector.js');
  const { aliasTable } = await import('../../src/collectors/engine/aliases.js');
  const table = aliasTable('vllm')!;
  const runs: number[] = [];
  for (let r = 0; r < 20; r++) normalizeScrape(text, table, 'vllm'); // warm-up (JIT)
  for (let r = 0; r < 200; r++) {
    const t = performance.now();
    normalizeScrape(text, table, 'vllm');
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  const q = (p: number) => runs[Math.min(runs.length - 1, Math.floor(p * runs.length))]!.toFixed(2);
  const n = text.split('\n').length - 1;
  process.stdout.write(`vLLM-format scrape: ${n} lines, ${(text.length / 1024).toFixed(0)} KiB; parse+normalize over ${runs.length} runs: median ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms\n`);
}

// Only with a flag: `node --test dist/test` would otherwise run this file as a test.
const asScript = import.meta.url === pathToFileURL(process.argv[1] ?? '').href;
if (asScript && (process.argv.includes('--lines') || process.argv.includes('--measure'))) void main(process.argv.slice(2));
