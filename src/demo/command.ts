/**
 * `infermeter demo` (npm run demo): the built-in vLLM simulator, infermeter in front of it
 * with the fake nvidia-smi as its GPU source, and a load generator stepping through request
 * rates, each step an open-loop schedule of fixed length (schedule.ts, load.ts); a live line
 * every few seconds and at each step's end; after the last step (with --duration) the streams
 * in flight finish, shown as draining, and the demo stops. Ctrl-C stops everything cleanly.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { Agent } from 'undici';
import { pino } from 'pino';
import { loadConfigFile, resolveConfig } from '../config.js';
import { startInfermeter } from '../daemon/main.js';
import { startSimulator } from '../sim/index.js';
import { parseDuration, parseList } from '../lib/parse.js';
import { parseSloConfig } from '../slo/config.js';
import { watchParent } from './parent-watch.js';
import { ConfigError } from '../lib/errors.js';
import { DEFAULT_STEP_SECONDS, demoSchedule, seconds, stepAt, type DemoSchedule, type DemoStep } from './schedule.js';
import { DEMO_MODEL, DemoLoad } from './load.js';
import { LiveLine } from './live-line.js';

/**
 * Longest the demo takes to stop once asked: its children are stopped in milliseconds on a
 * quiet machine, but a machine busy elsewhere can starve them for a second or two.
 */
const HARD_STOP_MS = 3000;
/** The proxy's drain in the demo: only the demo's own load is in flight, and its client is closed first. */
const DEMO_SHUTDOWN_TIMEOUT_S = 2;

/** Longest the drain after the last step waits for the streams in flight. */
const DRAIN_LIMIT_MS = 30_000;

const FAKE_NVIDIA_SMI = fileURLToPath(new URL('../../../bin/fake-nvidia-smi', import.meta.url));

interface DemoOptions {
  listen: string;
  metricsListen: string;
  rates: string;
  step: string;
  duration: string;
  summaryEvery: string;
  arrivals: 'poisson' | 'constant';
  config?: string;
}

export function demoCommand(): Command {
  return new Command('demo')
    .description('run the simulator, infermeter in front of it and a load generator; no GPU needed (Ctrl-C stops)')
    .option('--listen <host:port>', 'infermeter proxy listener', '127.0.0.1:8080')
    .option('--metrics-listen <host:port>', 'infermeter /metrics listener', '127.0.0.1:9464')
    .option('--rates <list>', 'request rates (req/s) the load steps through, in order: each step an open-loop schedule of fixed length, streams still running at its end finishing during the next', '1,2,4,8')
    .option('--step <duration>', 'time at each rate; with --duration and no --step, --duration split evenly over the rates (each runs once); with both, the rates cycle until --duration', `${DEFAULT_STEP_SECONDS}s`)
    .option('--duration <duration>', 'length of the load schedule, then the streams in flight finish and the demo stops (0 = the rates cycle until Ctrl-C)', '0')
    .option('--summary-every <duration>', 'live line interval (a line at each step\'s end too)', '5s')
    .addOption(new Option('--arrivals <kind>', 'constant: evenly spaced at the rate; poisson: exponential gaps, as independent users send, so a line\'s sent figure varies with them').choices(['constant', 'poisson']).default('constant'))
    .addOption(new Option('--config <file>', 'infermeter config file for the proxy (slos, buckets, ...), validated as serve validates it; INFERMETER_* variables apply too, as for serve, except to what the demo sets itself').env('INFERMETER_CONFIG'))
    .action(async (o: DemoOptions, cmd: Command) => runDemo(o, cmd.getOptionValueSource('step') !== 'default'));
}

async function runDemo(o: DemoOptions, stepGiven: boolean): Promise<void> {
  const rates = parseList(o.rates).map(Number);
  if (rates.length === 0 || rates.some((r) => !(r > 0))) throw new ConfigError('--rates', `expected positive numbers, got "${o.rates}"`);
  const stepSeconds = flagValue('--step', () => positive(parseDuration(o.step)));
  const duration = flagValue('--duration', () => parseDuration(o.duration));
  const every = flagValue('--summary-every', () => positive(parseDuration(o.summaryEvery)));
  const schedule = demoSchedule(rates, stepGiven ? stepSeconds : null, duration);
  // The file is checked before anything starts: a bad one stops the demo as it stops serve.
  if (o.config) loadConfigFile(o.config);

  const sim = await startSimulator({ listen: '127.0.0.1:0', models: DEMO_MODEL, outputTokens: '32-256' });
  // The fake nvidia-smi follows the simulator's load, so the GPU panels move with traffic.
  process.env['FAKE_NVIDIA_SMI_SIM_URL'] = sim.url;
  process.env['FAKE_NVIDIA_SMI_GPUS'] ??= '2';
  const config = resolveConfig({ upstream: sim.url, listen: o.listen, metricsListen: o.metricsListen, nvidiaSmi: FAKE_NVIDIA_SMI, engineInterval: '2s', logLevel: 'warn', ...(o.config ? { config: o.config } : {}) }, process.env);
  config.shutdownTimeout = Math.min(config.shutdownTimeout, DEMO_SHUTDOWN_TIMEOUT_S);
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
  load                      ${loadLine(schedule, o.arrivals)}${schedule.note ? `\n  note                      ${schedule.note}` : ''}
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
    // The load is the demo's own: nothing in flight is worth waiting for. Its client goes first
    // (each stream ends as a client abort, which is no warning), so the proxy's drain (and the
    // fake nvidia-smi children it stops) takes milliseconds, not --shutdown-timeout; the
    // simulator last, with nothing left to break. A hard stop backs it up.
    setTimeout(() => {
      console.log(`demo stopped (${why ? `${why}; ` : ''}its children did not stop within ${HARD_STOP_MS / 1000}s)`);
      process.exit(code);
    }, HARD_STOP_MS).unref();
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

  const load = new DemoLoad({ url: proxy, dispatcher: loadAgent, arrivals: o.arrivals });
  const t0 = performance.now();
  const line = new LiveLine(metrics, load, t0);
  const stopped = () => stopping;
  await runSchedule(schedule, load, line, every * 1000, t0, stopped);
  if (stopping) return;
  const drained = await drain(load, line, every * 1000, stopped);
  void stop(0, drained ? undefined : `${load.inFlight} streams still in flight after ${DRAIN_LIMIT_MS / 1000}s of draining`);
}

/**
 * The steps back to back, each starting where the one before was due to end (one clock: a
 * late line or a slow stream moves nothing). The lines run beside the load on the same clock:
 * one every `everyMs` within a step and one at its end, so that no line spans two steps.
 */
async function runSchedule(schedule: DemoSchedule, load: DemoLoad, line: LiveLine, everyMs: number, t0: number, stopped: () => boolean): Promise<void> {
  const steps = async (each: (step: DemoStep, i: number, startAt: number) => Promise<void>) => {
    let startAt = t0;
    for (let i = 0, step = stepAt(schedule, 0); step && !stopped(); step = stepAt(schedule, ++i)) {
      await each(step, i, startAt);
      startAt += step.seconds * 1000;
    }
  };
  await Promise.all([
    steps((step, i, startAt) => load.offer(step.rate, startAt, step.seconds, i + 1, stopped)),
    steps(async (step, _i, startAt) => {
      const endMs = step.seconds * 1000;
      for (let k = 1, atMs = 0; atMs < endMs && !stopped(); k++) {
        atMs = endMs - k * everyMs < 1 ? endMs : k * everyMs;
        await sleepUntil(startAt + atMs);
        if (!stopped()) void line.print(`offered ${step.rate} req/s`);
      }
    }),
  ]);
}

/** After the last step: lines headed "draining" until nothing is in flight; false when the limit cut it. */
async function drain(load: DemoLoad, line: LiveLine, everyMs: number, stopped: () => boolean): Promise<boolean> {
  const start = performance.now();
  for (let k = 1; !stopped(); k++) {
    const idle = await Promise.race([load.idle().then(() => true), sleepUntil(start + k * everyMs).then(() => false)]);
    if (stopped()) break;
    await line.print('draining');
    if (idle) return true;
    if (performance.now() - start >= DRAIN_LIMIT_MS) return false;
  }
  return true;
}

function sleepUntil(at: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));
}

/** The banner's load line: the steps, their length, and when the load ends. */
function loadLine(s: DemoSchedule, arrivals: string): string {
  const steps = `${s.rates.join(' → ')} req/s, ${seconds(s.stepSeconds)} each, ${arrivals} arrivals`;
  return s.totalSeconds === Infinity ? `${steps}, cycling until Ctrl-C` : `${steps}, for ${seconds(s.totalSeconds)}, then the streams in flight finish`;
}

function positive(v: number): number {
  if (!(v > 0)) throw new Error(`expected a duration above 0, got ${v}`);
  return v;
}

/** A bad demo flag is a usage error (exit 2) naming the flag, as serve's are. */
function flagValue<T>(flag: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw new ConfigError(flag, (err as Error).message, { cause: err });
  }
}
