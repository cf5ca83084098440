/**
 * npm run soak — a long run of requests through infermeter against the built-in simulator
 * at fast settings, with injected faults (HTTP 500s, mid-stream errors, dropped
 * connections) and client aborts. Checks that RSS, open descriptors and the proxy's
 * event-loop delay stay flat from the first quarter to the last, and that every request is
 * accounted for in infermeter_requests_total. Bounded in count and in time.
 *
 *   SOAK_REQUESTS (default 1,000,000)  SOAK_CONCURRENCY (64)  SOAK_MAX_SECONDS (900)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { ROOT, startProcess } from './lib.js';
import { startSimulator } from '../src/sim/index.js';
import { parsePrometheusText, sumSamples } from '../src/lib/prom-text.js';

export interface SoakReport {
  sent: number;
  counted: number;
  byOutcome: Record<string, number>;
  seconds: number;
  quarters: { rssMiB: number; fds: number; loopP99Ms: number }[];
  flat: boolean;
  reasons: string[];
}

interface Sample { at: number; rss: number; fds: number; loopP99: number }

export async function runSoak(opts: { requests: number; concurrency: number; maxSeconds: number; log?: (line: string) => void }): Promise<SoakReport> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', outputTokens: '2-12', errorRate: '0.005', midstreamErrorRate: '0.005', dropRate: '0.002', models: 'soak-model' });
  const im = await startProcess(process.execPath, [`${ROOT}dist/src/cli.js`, '--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.host', '--engine-interval', '1s'], /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/);
  const pid = im.child.pid!;
  const proxy = `http://127.0.0.1:${im.match[1]}`;
  const metricsUrl = `http://127.0.0.1:${im.match[2]}/metrics`;
  const agent = new Agent({ connections: opts.concurrency + 4 });
  const samples: Sample[] = [];
  const readProc = () => ({
    rss: Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
  });
  let loopP99 = 0;
  const t0 = performance.now();
  const sampler = setInterval(() => {
    void request(metricsUrl).then(async (r) => {
      const s = parsePrometheusText(await r.body.text()).samples;
      loopP99 = sumSamples(s, 'infermeter_proxy_event_loop_delay_seconds', { stat: 'p99' });
    }).catch(() => undefined);
    samples.push({ at: performance.now() - t0, ...readProc(), loopP99 });
  }, 1000);

  let sent = 0;
  let done = 0;
  const deadline = t0 + opts.maxSeconds * 1000;
  const worker = async () => {
    while (sent < opts.requests && performance.now() < deadline) {
      const n = sent++;
      const stream = n % 10 !== 0;
      const abort = n % 97 === 0 ? new AbortController() : null;
      try {
        const res = await request(`${proxy}/v1/chat/completions`, {
          method: 'POST',
          dispatcher: agent,
          signal: abort?.signal,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'soak-model', stream, max_tokens: 8, messages: [{ role: 'user', content: `soak ${n % 50}` }] }),
        });
        if (abort) abort.abort();
        await res.body.dump();
      } catch {
        /* injected drops and our own aborts */
      }
      done++;
      if (done % 50_000 === 0) log(`  ${done.toLocaleString('en')} requests, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  await agent.close();

  let counted = 0;
  let byOutcome: Record<string, number> = {};
  for (let i = 0; i < 100; i++) {
    const s = parsePrometheusText(await (await request(metricsUrl)).body.text()).samples.filter((x) => x.name === 'infermeter_requests_total');
    byOutcome = {};
    for (const x of s) byOutcome[x.labels['outcome']!] = (byOutcome[x.labels['outcome']!] ?? 0) + x.value;
    counted = Object.values(byOutcome).reduce((a, b) => a + b, 0);
    if (counted >= sent) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  im.child.kill('SIGTERM');
  await sim.close();

  // The first tenth is warm-up (JIT, heap sizing, pools filling); quarters split the rest.
  const steady = samples.slice(Math.floor(samples.length / 10));
  const q = Math.max(1, Math.floor(steady.length / 4));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const quarters = [0, 1, 2, 3].map((i) => steady.slice(i * q, i === 3 ? steady.length : (i + 1) * q)).map((part) => ({
    rssMiB: median(part.map((s) => s.rss)) / 2 ** 20,
    fds: median(part.map((s) => s.fds)),
    loopP99Ms: Math.max(0, ...part.map((s) => s.loopP99)) * 1000,
  }));
  const first = quarters[0]!;
  const last = quarters[3]!;
  const reasons: string[] = [];
  if (counted !== sent) reasons.push(`requests counted ${counted} ≠ sent ${sent}`);
  if (last.rssMiB > first.rssMiB * 1.25 + 16) reasons.push(`RSS grew ${first.rssMiB.toFixed(0)} → ${last.rssMiB.toFixed(0)} MiB`);
  if (last.fds > first.fds + 16) reasons.push(`descriptors grew ${first.fds} → ${last.fds}`);
  if (last.loopP99Ms > first.loopP99Ms * 2 + 20) reasons.push(`event-loop p99 grew ${first.loopP99Ms.toFixed(1)} → ${last.loopP99Ms.toFixed(1)} ms`);
  return { sent, counted, byOutcome, seconds, quarters, flat: reasons.length === 0, reasons };
}

export function printSoak(r: SoakReport): void {
  console.log(`\nsoak: ${r.sent.toLocaleString('en')} requests in ${r.seconds.toFixed(0)} s (${(r.sent / r.seconds).toFixed(0)} req/s); counted ${r.counted.toLocaleString('en')}: ${JSON.stringify(r.byOutcome)}`);
  console.log('| quarter | RSS median MiB | open fds median | proxy loop p99 max ms |');
  console.log('| --- | --- | --- | --- |');
  r.quarters.forEach((x, i) => console.log(`| ${i + 1} | ${x.rssMiB.toFixed(1)} | ${x.fds} | ${x.loopP99Ms.toFixed(1)} |`));
  console.log(r.flat ? 'flat: yes, every request accounted for' : `NOT flat: ${r.reasons.join('; ')}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const report = await runSoak({
    requests: Number(process.env['SOAK_REQUESTS'] ?? 1_000_000),
    concurrency: Number(process.env['SOAK_CONCURRENCY'] ?? 64),
    maxSeconds: Number(process.env['SOAK_MAX_SECONDS'] ?? 900),
  });
  printSoak(report);
  process.exit(report.flat ? 0 : 1);
}
