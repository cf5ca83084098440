/**
 * `infermeter demo` (npm run demo): the built-in vLLM simulator, infermeter in front of it
 * with the fake nvidia-smi as its GPU source, and a load generator stepping through request
 * rates; a live summary line every few seconds; Ctrl-C stops everything cleanly.
 */
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { Agent, request } from 'undici';
import { pino } from 'pino';
import { loadConfigFile, resolveConfig } from '../config.js';
import { startInfermeter } from '../daemon/main.js';
import { startSimulator } from '../sim/index.js';
import { runLoad } from '../sim/load.js';
import type { ApiName } from '../record/routes.js';

/** The demo's traffic: every generation API, chat the most (shares of the offered rate). */
const DEMO_MIX: readonly (readonly [ApiName, number])[] = [['chat', 0.4], ['messages', 0.3], ['responses', 0.2], ['completions', 0.1]];
import { sumSamples, type Sample } from '../lib/prom-text.js';
import { parseDuration, parseList } from '../lib/parse.js';
import { decodeMetricFamilies, PROTOBUF_CONTENT_TYPE, type DecodedFamily } from '../exporters/prometheus/proto.js';
import { nativeCounts, nativeQuantileOfDelta } from './native-quantile.js';
import { parseSloConfig } from '../slo/config.js';
import { watchParent } from './parent-watch.js';
import { ConfigError } from '../lib/errors.js';

/** Longest the demo takes to stop once asked (its children are stopped well before). */
const HARD_STOP_MS = 800;

const FAKE_NVIDIA_SMI = fileURLToPath(new URL('../../../bin/fake-nvidia-smi', import.meta.url));

interface DemoOptions {
  listen: string;
  metricsListen: string;
  rates: string;
  step: string;
  duration: string;
  summaryEvery: string;
  config?: string;
}

export function demoCommand(): Command {
  return new Command('demo')
    .description('run the simulator, infermeter in front of it and a load generator; no GPU needed (Ctrl-C stops)')
    .option('--listen <host:port>', 'infermeter proxy listener', '127.0.0.1:8080')
    .option('--metrics-listen <host:port>', 'infermeter /metrics listener', '127.0.0.1:9464')
    .option('--rates <list>', 'request rates (req/s) the load steps through, cycling', '1,2,4,8')
    .option('--step <duration>', 'time spent at each rate', '20s')
    .option('--duration <duration>', 'stop after this long (0 = until Ctrl-C)', '0')
    .option('--summary-every <duration>', 'live summary interval', '5s')
    .addOption(new Option('--config <file>', 'infermeter config file for the proxy (slos, buckets, ...), validated as serve validates it; INFERMETER_* variables apply too, as for serve, except to what the demo sets itself').env('INFERMETER_CONFIG'))
    .action(async (o: DemoOptions) => runDemo(o));
}

async function runDemo(o: DemoOptions): Promise<void> {
  const rates = parseList(o.rates).map(Number);
  if (rates.length === 0 || rates.some((r) => !(r > 0))) throw new ConfigError('--rates', `expected positive numbers, got "${o.rates}"`);
  const stepSeconds = flagValue('--step', () => parseDuration(o.step));
  const duration = flagValue('--duration', () => parseDuration(o.duration));
  const every = flagValue('--summary-every', () => parseDuration(o.summaryEvery));
  // The file is checked before anything starts: a bad one stops the demo as it stops serve.
  if (o.config) loadConfigFile(o.config);

  const sim = await startSimulator({ listen: '127.0.0.1:0', models: 'meta-llama/Llama-3.1-8B-Instruct', outputTokens: '32-256' });
  // The fake nvidia-smi follows the simulator's load, so the GPU panels move with traffic.
  process.env['FAKE_NVIDIA_SMI_SIM_URL'] = sim.url;
  process.env['FAKE_NVIDIA_SMI_GPUS'] ??= '2';
  const config = resolveConfig({ upstream: sim.url, listen: o.listen, metricsListen: o.metricsListen, nvidiaSmi: FAKE_NVIDIA_SMI, engineInterval: '2s', logLevel: 'warn', ...(o.config ? { config: o.config } : {}) }, process.env);
  config.shutdownTimeout = Math.min(config.shutdownTimeout, 0.5); // only the demo's own load is in flight
  // SLOs so that the page draws thresholds and burn rates (both are default bucket boundaries already),
  // unless the given config file sets its own.
  if (!o.config || (Object.keys(config.slos.default).length === 0 && Object.keys(config.slos.models).length === 0)) {
    config.slos = parseSloConfig({ objective: 0.99, default: { ttft: '1s', tpot: '75ms' } }, 'demo');
  }
  const running = await startInfermeter(config, pino({ level: 'warn' }));
  const proxy = `http://127.0.0.1:${running.proxyPort}`;
  const metrics = `http://127.0.0.1:${running.metricsPort}/metrics`;
  console.log(`infermeter demo: open the live status page  http://127.0.0.1:${running.metricsPort}/

  simulated vLLM (no GPU)   ${sim.url}
  infermeter proxy          ${proxy}/v1   (point any OpenAI client here)
  infermeter /metrics       ${metrics}
  load                      ${rates.join(' → ')} req/s, ${stepSeconds}s each${duration > 0 ? `, for ${duration}s` : ', until Ctrl-C'}
  GPU source                fake nvidia-smi (${FAKE_NVIDIA_SMI})
  try: curl -s ${metrics} | grep -E '^(gen_ai_server_time_to_first_token|infermeter_gpu_sm|infermeter_engine_kv)'
`);

  /** The load generator's own connections: destroyed first on stop. */
  const loadAgent = new Agent({ keepAliveTimeout: 10_000, connections: null });
  let stopping = false;
  const stop = async (code: number, why?: string) => {
    if (stopping) return;
    stopping = true;
    stopWatching();
    clearInterval(summary);
    // The load is the demo's own: nothing in flight is worth waiting for. Its client goes first
    // (each stream ends as a client abort, which is no warning), so the proxy's drain (and the
    // fake nvidia-smi children it stops) takes milliseconds, not --shutdown-timeout; the
    // simulator last, with nothing left to break. A hard stop backs it up.
    setTimeout(() => process.exit(code), HARD_STOP_MS).unref();
    await loadAgent.destroy().catch(() => undefined);
    await running.close();
    await sim.close();
    console.log(why ? `demo stopped (${why})` : 'demo stopped');
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  // A parent that went away (timeout, a closed terminal, a closed pipe) must not leave the demo running.
  const stopWatching = watchParent((why) => void stop(0, why));

  let before: DecodedFamily[] = [];
  let rate = rates[0]!;
  const summary = setInterval(() => void printSummary(metrics, before, every, rate).then((s) => (before = s)).catch(() => undefined), every * 1000);
  summary.unref();
  if (duration > 0) setTimeout(() => void stop(0), duration * 1000).unref();

  for (let i = 0; !stopping; i = (i + 1) % rates.length) {
    rate = rates[i]!;
    // The offered rate, split over the four generation APIs as a node serving agents sees them.
    await Promise.all(DEMO_MIX.map(([route, share], k) => runLoad({
      url: proxy, model: 'meta-llama/Llama-3.1-8B-Instruct', route, rate: rate * share, arrivals: 'poisson', dispatcher: loadAgent,
      requests: Math.max(1, Math.round(rate * share * stepSeconds)), maxTokens: 128, seed: i * DEMO_MIX.length + k,
    }).catch(() => undefined)));
  }
}

/** A bad demo flag is a usage error (exit 2) naming the flag, as serve's are. */
function flagValue<T>(flag: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw new ConfigError(flag, (err as Error).message, { cause: err });
  }
}

/**
 * The live line. Percentiles come from the native histograms (the protobuf exposition, as a
 * Prometheus with native histograms scrapes it), never from classic-bucket interpolation.
 */
async function printSummary(url: string, before: DecodedFamily[], seconds: number, rate: number): Promise<DecodedFamily[]> {
  const res = await request(url, { headers: { accept: PROTOBUF_CONTENT_TYPE } });
  const now = decodeMetricFamilies(new Uint8Array(await res.body.arrayBuffer()));
  const samples = samplesOf(now);
  const reqs = sumSamples(samples, 'infermeter_requests_total') - sumSamples(samplesOf(before), 'infermeter_requests_total');
  const q = (name: string, p: number) => nativeQuantileOfDelta(p, nativeCounts(now, name), nativeCounts(before, name));
  const ms = (v: number | null) => (v === null ? '   -' : `${(v * 1000).toFixed(0).padStart(4)}`);
  const ttft = 'gen_ai_server_time_to_first_token_seconds';
  const tpot = 'gen_ai_server_time_per_output_token_seconds';
  const kv = sumSamples(samples, 'infermeter_engine_kv_cache_usage_ratio');
  const gpu = samples.filter((s) => s.name === 'infermeter_gpu_sm_utilization_ratio').map((s) => `${(s.value * 100).toFixed(0)}%`).join('/') || '-';
  console.log(
    `[${new Date().toISOString().slice(11, 19)}] offered ${rate} req/s | done ${(reqs / seconds).toFixed(1)} req/s | TTFT p50/p99 ${ms(q(ttft, 0.5))}/${ms(q(ttft, 0.99))} ms | TPOT p50/p99 ${ms(q(tpot, 0.5))}/${ms(q(tpot, 0.99))} ms | KV ${(kv * 100).toFixed(0)}% | GPU sm ${gpu}`,
  );
  return now;
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
