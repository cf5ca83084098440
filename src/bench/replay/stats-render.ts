/** `infermeter trace stats` as Markdown: the same tables a reader pastes into a capacity note. */
import { DASH, num, pct } from '../format.js';
import type { Distribution } from '../stats.js';
import type { TraceStats } from './stats.js';

export function renderTraceStats(s: TraceStats): string {
  const out: string[] = ['# Workload trace', ''];
  out.push('| file | requests | block size | blocks cut from | kept | start | recorded by |', '| --- | ---: | ---: | --- | ---: | --- | --- |');
  for (const f of s.files) {
    out.push(`| ${f.path} | ${f.requests} | ${f.blockSize} (${f.blockSizeFrom === 'default' ? "Mooncake's default" : f.blockSizeFrom}) | ${f.cut ?? DASH} | ${f.sampling === null ? DASH : pct(f.sampling, 1)} | ${f.startTime ?? DASH} | ${f.version ?? DASH} |`);
  }
  out.push('', `${s.requests} requests over ${num(s.spanSeconds, 1)} s (first to last arrival): ${num(s.arrivalRate)} req/s on average.`, '');
  out.push(`## Arrivals over time (${num(s.bucketSeconds, s.bucketSeconds < 1 ? 3 : 0)} s buckets)`, '', '| from (s) | requests | req/s | input tok/s |', '| ---: | ---: | ---: | ---: |');
  for (const b of s.rate) out.push(`| ${num(b.start, s.bucketSeconds < 1 ? 3 : 0)} | ${b.requests} | ${num(b.requestsPerSecond)} | ${num(b.inputTokensPerSecond, 0)} |`);
  out.push('', '## Lengths (tokens)', '', '| | min | mean | P50 | P95 | P99 | max |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  out.push(dist('input', s.inputTokens), dist('output', s.outputTokens), '');
  out.push('| length ≤ | input | output |', '| ---: | ---: | ---: |');
  for (const h of s.lengthHistogram) out.push(`| ${h.upTo} | ${h.input} | ${h.output} |`);
  out.push('', '## Mix', '');
  for (const [title, tallyOf] of [['API', s.api], ['model', s.model], ['stream', s.stream], ['outcome', s.outcome]] as const) {
    out.push(`| ${title} | requests | share |`, '| --- | ---: | ---: |');
    for (const [k, n] of Object.entries(tallyOf)) out.push(`| ${k} | ${n} | ${pct(n / Math.max(1, s.requests), 1)} |`);
    out.push('');
  }
  out.push('## Prefix reuse', '', '| cache | prompt tokens found cached | share | requests with a hit |', '| --- | ---: | ---: | ---: |');
  for (const r of s.reuse) {
    const sampled = r.rate < 1 ? ` (estimated from ${pct(r.rate, 2)} of blocks: the model's memory cap)` : '';
    out.push(`| ${r.model}: ${r.description}${sampled} | ${Math.round(r.hitTokens)} of ${r.promptTokens} | ${pct(r.share, 1)} | ${r.requestsHit} |`);
  }
  out.push('', 'A hit is a request\'s leading run of blocks the cache holds, counted in the trace\'s blocks (a partial last block counts its own tokens); requests in arrival order.', '');
  return out.join('\n');
}

function dist(name: string, d: Distribution): string {
  const f = (v: number | null) => num(v, 0);
  return `| ${name} | ${f(d.min)} | ${num(d.mean, 1)} | ${f(d.p50)} | ${f(d.p95)} | ${f(d.p99)} | ${f(d.max)} |`;
}
