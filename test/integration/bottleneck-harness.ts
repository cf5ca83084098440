/**
 * One bottleneck regime, end to end: the simulator with the regime's flags, infermeter in
 * front of it (engine collector on, the fake nvidia-smi when asked, short evaluation window),
 * closed-loop load through the proxy, then the verdict read three ways: GET /api/v1/status,
 * the infermeter_bottleneck gauge on /metrics, and the page as headless Chromium renders it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { runCommand } from '../../src/lib/spawn.js';
import { runLoad } from '../../src/sim/load.js';
import { startSimulator, type Simulator, type SimulatorInput } from '../../src/sim/index.js';
import { BOTTLENECK_KINDS, type BottleneckKind } from '../../src/metrics/bottleneck/rules.js';
import type { BottleneckVerdict } from '../../src/metrics/bottleneck/judge.js';
import type { SignalName } from '../../src/metrics/bottleneck/signals.js';
import { scrape } from '../helpers.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { statusValidator, statusWhen } from './ui-helpers.js';

export const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
/** Under CI a missing browser fails the test; elsewhere the page check is skipped with a reason. */
export const NO_CHROMIUM = !existsSync(CHROMIUM) && !process.env['CI'] ? `no ${CHROMIUM}` : false;

export const MODEL = 'regime-model';

export interface RegimeSpec {
  sim: SimulatorInput;
  /** Extra infermeter arguments. */
  args?: string[];
  /** SLO thresholds for the model (config file), e.g. { tpot: '30ms' }. */
  slos?: Record<string, string>;
  /** The fake nvidia-smi's settings (FAKE_NVIDIA_SMI_*, without the prefix); absent: no GPU collector. */
  gpu?: Record<string, string>;
  load: {
    concurrency: number;
    maxTokens: number;
    /** Prompt of request i (default: a short one). */
    prompt?: (i: number) => string;
    /** Requests sent one at a time before the load starts (the single-stream baseline). */
    warmup?: number;
  };
}

export interface Regime {
  sim: Simulator;
  infermeter: InfermeterProcess;
  /** The metrics listener's base URL (/metrics, /api/v1/status, the page). */
  base: string;
  close(): Promise<void>;
}

export async function startRegime(spec: RegimeSpec): Promise<Regime> {
  const dir = mkdtempSync(join(tmpdir(), 'bottleneck-'));
  const sim = await startSimulator({ listen: '127.0.0.1:0', models: MODEL, ...spec.sim });
  // infermeter runs as its own process, as in production: the load generator and the
  // simulator here do not share its proxy loop (whose delay is one of the signals).
  const args = ['--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--log-level', 'info',
    '--engine-interval', '0.25s', '--bottleneck-interval', '0.5s', '--bottleneck-window', '4s', '--no-collector.host'];
  const env: Record<string, string> = {};
  if (spec.slos) {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, `slos:\n  default:\n${Object.entries(spec.slos).map(([k, v]) => `    ${k}: ${v}\n`).join('')}`);
    args.push('--config', file);
  }
  if (spec.gpu) {
    for (const [k, v] of Object.entries({ PERIOD_MS: '100', SIM_URL: sim.url, ...spec.gpu })) env[`FAKE_NVIDIA_SMI_${k}`] = v;
    args.push('--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-source', 'nvidia-smi');
  } else args.push('--no-collector.gpu');
  const infermeter = new InfermeterProcess([...args, ...(spec.args ?? [])], env);
  await infermeter.start();
  const proxy = { url: infermeter.proxyUrl };
  const agent = new Agent({ connections: null });
  let stopped = false;
  const prompt = spec.load.prompt ?? ((i: number) => `request ${i}: say something short.`);
  let next = 0;
  const one = async () => {
    const i = next++;
    await runLoad({ url: proxy.url, model: MODEL, route: 'chat', requests: 1, maxTokens: spec.load.maxTokens, prompt: prompt(i), dispatcher: agent });
  };
  const loops = (async () => {
    for (let i = 0; i < (spec.load.warmup ?? 0) && !stopped; i++) await one();
    await Promise.all(Array.from({ length: spec.load.concurrency }, async () => {
      while (!stopped) await one();
    }));
  })();
  return {
    sim, infermeter, base: infermeter.metricsUrl,
    async close() {
      stopped = true;
      await agent.destroy();
      await loops.catch(() => undefined);
      await infermeter.stop();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until the status JSON names `kind` for the model; returns its verdict (schema-valid). */
export async function verdictIs(base: string, kind: BottleneckKind, timeoutMs = 30_000): Promise<BottleneckVerdict> {
  const doc = await statusWhen(base, (d) => d.models.some((m) => m.model === MODEL && m.bottleneck?.kind === kind), timeoutMs);
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));
  return doc.models.find((m) => m.model === MODEL)!.bottleneck!;
}

/** The evidence names these signals, each with a number (or null for an optional one), its unit and window. */
export function assertEvidence(v: BottleneckVerdict, signals: SignalName[]): void {
  for (const s of signals) {
    const e = v.evidence.find((x) => x.signal === s);
    assert.ok(e, `evidence has ${s}: ${JSON.stringify(v.evidence)}`);
    assert.ok(e.unit.length > 0 && e.window.length > 0, JSON.stringify(e));
  }
}

/** The model's verdict as the status JSON has it now (null: none yet). */
async function currentVerdict(base: string): Promise<BottleneckVerdict | null> {
  const doc = await statusWhen(base, () => true);
  return doc.models.find((m) => m.model === MODEL)?.bottleneck ?? null;
}

/**
 * Reads another view of the verdict (`read`) between two reads of the JSON, like with like:
 * when both say `kind` since the same moment, the verdict did not change in between, and the
 * view must show `kind` (its failure is thrown as it is). When the verdict moved meanwhile
 * (the machine's load is one of its signals: a browser starting on 2 cores lags the proxy's
 * loop), the view was read across a change; then wait for `kind` again and read again, a
 * few times at most.
 */
async function sameVerdict<T>(base: string, kind: BottleneckKind, what: string, read: (now: BottleneckVerdict) => Promise<T>, shown: (v: BottleneckVerdict) => string = () => ''): Promise<T> {
  const moves: string[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const before = await verdictIs(base, kind);
    let result: T | undefined;
    let failure: unknown = null;
    try {
      result = await read(before);
    } catch (err) {
      failure = err;
    }
    const after = await currentVerdict(base);
    if (after?.kind === kind && after.since === before.since && shown(after) === shown(before)) {
      if (failure !== null) throw failure;
      return result!;
    }
    moves.push(`${kind} since ${before.since} [${shown(before)}] → ${after?.kind ?? 'none'} since ${after?.since ?? '-'} [${after ? shown(after) : ''}]`);
  }
  throw new Error(`the verdict kept moving while ${what} was read: ${moves.join('; ')}`);
}

/** /metrics: the gauge is 1 for `kind` and 0 for every other kind of the model. */
export async function assertGauge(base: string, kind: BottleneckKind): Promise<void> {
  await sameVerdict(base, kind, 'the gauge', async () => {
    const { samples } = await scrape(`${base}/metrics`);
    const mine = samples.filter((s) => s.name === 'infermeter_bottleneck' && s.labels['gen_ai_request_model'] === MODEL);
    assert.equal(mine.length, BOTTLENECK_KINDS.length, `one series per kind: ${JSON.stringify(mine)}`);
    for (const s of mine) assert.equal(s.value, s.labels['kind'] === kind ? 1 : 0, `${s.labels['kind']}: ${s.value}`);
  });
}

/**
 * The page in headless Chromium: the model's row starts with the verdict cell, data-value
 * the kind, and its text names the first two evidence signals of the verdict as the JSON has it
 * at that moment (a verdict's evidence may switch between its row's alternatives while its
 * kind stays: read again then, as for a change of kind). Returns the cell's text.
 */
export function assertPage(base: string, kind: BottleneckKind): Promise<string> {
  const firstTwo = (v: BottleneckVerdict): SignalName[] => v.evidence.slice(0, 2).map((e) => e.signal);
  return sameVerdict(base, kind, 'the page', (now) => pageOnce(base, kind, firstTwo(now)), (v) => firstTwo(v).join(','));
}

async function pageOnce(base: string, kind: BottleneckKind, signals: SignalName[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'bottleneck-page-'));
  try {
    // At nice 19: the browser is the test's tool, and on 2 cores it would otherwise take the
    // CPU from the proxy it reads, whose loop delay is itself a verdict's signal.
    const r = await runCommand('nice', ['-n', '19', CHROMIUM,
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--no-first-run', '--no-default-browser-check', `--user-data-dir=${join(dir, 'profile')}`, '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--virtual-time-budget=4000', '--dump-dom', `${base}/`,
    ], 90_000);
    const row = new RegExp(`<tr data-model="${MODEL}"[^>]*>(.*?)</tr>`, 's').exec(r.stdout);
    assert.ok(row, `the page has a row for ${MODEL} (exit ${r.code}): ${r.stdout.slice(0, 400)}`);
    const cells = [...row[1]!.matchAll(/<td([^>]*)>(.*?)<\/td>/gs)];
    assert.match(cells[0]![1]!, /data-field="model"/);
    const verdict = cells[1]!;
    const text = verdict[2]!.replace(/<[^>]+>/g, '');
    assert.match(verdict[1]!, /data-field="bottleneck"/, 'the verdict is the row\'s first figure');
    assert.match(verdict[1]!, new RegExp(`data-value="${kind}"`), `the page shows: ${text}`);
    assert.ok(text.startsWith(kind), text);
    for (const s of signals) assert.ok(text.includes(signalWords(s)), `${s} on the page, in words: ${text}`);
    assert.doesNotMatch(text, /[a-z][A-Z]/, `no camelCase signal name on the page: ${text}`);
    assert.doesNotMatch(text, /\d\.\d+ requests/, `a count of requests is a count: ${text}`);
    return text;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const WORD_CASE: Record<string, string> = { ttft: 'TTFT', tpot: 'TPOT', kv: 'KV', gpu: 'GPU', slo: 'SLO', sm: 'SM', dram: 'DRAM' };

/** How the page names a signal: engineWaiting as "engine waiting", ttftP99 as "TTFT P99". */
export function signalWords(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(' ').map((w) => WORD_CASE[w.toLowerCase()] ?? (/^p\d+$/i.test(w) ? w.toUpperCase() : w.toLowerCase())).join(' ');
}

/** A prompt of about `tokens` tokens (the simulator counts ~4 characters a token), distinct per request. */
export function longPrompt(tokens: number): (i: number) => string {
  return (i) => `${i} ${'lorem ipsum dolor sit amet '.repeat(Math.ceil((tokens * 4) / 27))}`.slice(0, tokens * 4);
}

/**
 * The whole check of one regime: the verdict in the JSON (with `evidence`), the one-hot gauge,
 * and the page's row in Chromium (its first evidence signals shown).
 */
export async function checkRegime(spec: RegimeSpec, kind: BottleneckKind, evidence: SignalName[], page = true): Promise<BottleneckVerdict> {
  const r = await startRegime(spec);
  try {
    const v = await verdictIs(r.base, kind);
    assertEvidence(v, evidence);
    assert.ok(v.since > 0 && v.since <= Date.now());
    assert.ok(v.advice.length === 3 && v.advice[0]!.engine === 'vllm', JSON.stringify(v.advice));
    await assertGauge(r.base, kind);
    if (page && !NO_CHROMIUM) await assertPage(r.base, kind);
    return v;
  } finally {
    await r.close();
  }
}
