/**
 * npm run bench:ttft-gap — how far the TTFT infermeter records is from the TTFT its client
 * sees, per request, and where the difference is spent. The lean upstream (bench/upstream.ts,
 * its own process), infermeter (its own process, tracing on) and a closed-loop client (this
 * process) stream BENCH_REQUESTS (default 4000) requests, BENCH_CONCURRENCY (default 32) at a
 * time. Request i carries trace id i + 1, so its span (the proxy's own t0 and TTFT, exported
 * once at the end to a receiver in this process) joins the client's stopwatch.
 *
 * Clocks: the client and the upstream stamp CLOCK_MONOTONIC (process.hrtime, one clock for the
 * machine); a span carries wall-clock time (performance.timeOrigin + the proxy's own
 * performance.now()), whose offset from CLOCK_MONOTONIC is the proxy process's own. The
 * offset is bracketed from the data, without assuming anything: the proxy's t0 comes before
 * the upstream received the request, and its first-token stamp after the upstream wrote that
 * token. Legs that need the offset are printed at the bracket's middle, with its width.
 *
 * BENCH_BUSY=1 runs a busy loop (its own process) beside the load for the whole run.
 */
import diagnostics from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { ROOT, monoMs, percentile, sorted, startProcess } from './lib.js';

const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 4000);
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 32);
const BUSY = process.env['BENCH_BUSY'] === '1';
const SPEC = { firstMs: 20, chunks: 4, gapMs: 10 };

interface Span { startMs: number; ttftMs: number }

/** A minimal OTLP/HTTP JSON trace receiver: trace id → the span's start (epoch ms) and TTFT. */
async function spanReceiver(): Promise<{ url: string; spans: Map<string, Span>; close(): void }> {
  const spans = new Map<string, Span>();
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      if (req.url !== '/v1/traces') return;
      type Kv = { key: string; value: { doubleValue?: number } };
      const doc = JSON.parse(Buffer.concat(parts).toString()) as { resourceSpans: { scopeSpans: { spans: { traceId: string; startTimeUnixNano: string; attributes: Kv[] }[] }[] }[] };
      for (const s of doc.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((ss) => ss.spans))) {
        const ttft = s.attributes.find((a) => a.key === 'infermeter.ttft_seconds')?.value.doubleValue;
        if (ttft !== undefined) spans.set(s.traceId.toLowerCase(), { startMs: Number(BigInt(s.startTimeUnixNano)) / 1e6, ttftMs: ttft * 1000 });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, close: () => server.close() };
}

const receiver = await spanReceiver();
const busy = BUSY ? spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }) : null;
const node = process.execPath;
const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m);
const infermeter = await startProcess(
  node,
  [`${ROOT}dist/src/cli.js`, '--upstream', `http://127.0.0.1:${upstream.match[1]}`, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
    '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', '--log-level', 'info'],
  /"proxy":"([^"]+)"/,
  // Every span in one export after the last request: none dropped, none decoded during the load.
  { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: String(REQUESTS), OTEL_BSP_MAX_QUEUE_SIZE: String(REQUESTS + 1000), OTEL_BSP_SCHEDULE_DELAY: '600000' },
);
const proxy = `http://${infermeter.match[1]}`;

const traceId = (i: number) => (i + 1).toString(16).padStart(32, '0');
const client = Array.from({ length: REQUESTS }, () => ({ t0: NaN, sent: NaN, first: NaN, arrived: NaN, written: NaN }));
diagnostics.subscribe('undici:client:sendHeaders', (msg) => {
  const m = /traceparent: 00-([0-9a-f]{32})-/.exec((msg as { headers: string }).headers);
  if (m) client[parseInt(m[1]!, 16) - 1]!.sent = monoMs();
});
const STAMP = /^: ts=([0-9.]+) arr=([0-9.]+)$/m;
const agent = new Agent({ connections: CONCURRENCY });
const loop = monitorEventLoopDelay({ resolution: 10 });
let next = 0;
const body = JSON.stringify({ model: 'bench-model-0', stream: true, bench: SPEC });
const started = performance.now();
loop.enable();
await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
  while (next < REQUESTS) {
    const i = next++;
    const c = client[i]!;
    c.t0 = monoMs();
    const res = await request(`${proxy}/v1/chat/completions`, {
      method: 'POST', dispatcher: agent, body, headers: { 'content-type': 'application/json', traceparent: `00-${traceId(i)}-00f067aa0ba902b7-01` },
    });
    for await (const chunk of res.body) {
      if (!Number.isNaN(c.first)) continue;
      const m = STAMP.exec((chunk as Buffer).toString('latin1'));
      if (m) [c.first, c.written, c.arrived] = [monoMs(), Number(m[1]), Number(m[2])];
    }
  }
}));
loop.disable();
const seconds = (performance.now() - started) / 1000;
busy?.kill('SIGKILL');

for (let waited = 0; receiver.spans.size < REQUESTS && waited < 30_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
// The span's clock is CLOCK_MONOTONIC + offset. The proxy's t0 precedes the upstream's arrival
// stamp (offset ≥ start − arrived) and its first-token stamp follows the upstream's write
// (offset ≤ start + TTFT − written): every request narrows the bracket.
const rows: { c: (typeof client)[number]; s: Span }[] = [];
for (let i = 0; i < REQUESTS; i++) {
  const s = receiver.spans.get(traceId(i));
  const c = client[i]!;
  if (s && !Number.isNaN(c.first)) rows.push({ c, s });
}
const lo = Math.max(...rows.map((r) => r.s.startMs - r.c.arrived));
const hi = Math.min(...rows.map((r) => r.s.startMs + r.s.ttftMs - r.c.written));
const offset = (lo + hi) / 2;
const legs = { send: [] as number[], inbound: [] as number[], outbound: [] as number[], gap: [] as number[] };
for (const { c, s } of rows) {
  const t0 = s.startMs - offset;
  legs.send.push(c.sent - c.t0);
  legs.inbound.push(t0 - c.sent);
  legs.outbound.push(c.first - (t0 + s.ttftMs));
  legs.gap.push((c.first - c.t0) - s.ttftMs);
}
const q = (v: number[]) => {
  const s = sorted(v);
  return `${percentile(s, 50).toFixed(2)} | ${percentile(s, 90).toFixed(2)} | ${percentile(s, 99).toFixed(2)} | ${s[s.length - 1]!.toFixed(2)}`;
};
const out = [
  `${rows.length} of ${REQUESTS} requests joined, ${CONCURRENCY} at a time, in ${seconds.toFixed(1)} s${BUSY ? ', a busy loop beside them' : ''}; clock offset bracket ${(hi - lo).toFixed(2)} ms wide`,
  '',
  '| client TTFT − proxy TTFT, ms | P50 | P90 | P99 | max |',
  '| --- | --- | --- | --- | --- |',
  `| client: its t0 → its request headers written (its own loop, undici) | ${q(legs.send)} |`,
  `| headers written → the proxy's t0 (kernel queue until the proxy's loop reads; parsing) | ${q(legs.inbound)} |`,
  `| the proxy's first-token stamp → the client reads it (kernel queue; the client's loop) | ${q(legs.outbound)} |`,
  `| total | ${q(legs.gap)} |`,
  '',
  `client event-loop delay P50 / P99 / max: ${(loop.percentile(50) / 1e6 - 10).toFixed(2)} / ${(loop.percentile(99) / 1e6 - 10).toFixed(2)} / ${(loop.max / 1e6 - 10).toFixed(2)} ms`,
];
process.stdout.write(out.join('\n') + '\n');
await agent.close();
infermeter.child.kill('SIGTERM');
upstream.child.kill('SIGTERM');
receiver.close();
