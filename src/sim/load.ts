/**
 * A load generator of streaming (or, asked, non-streamed) requests on any of the four
 * generation APIs, timed from the client's side: open loop (Poisson or constant arrivals at
 * a rate, whatever the server's speed) or closed loop (a fixed number of requests in
 * flight). Streams are read with the proxy's own SSE framing and event rules, so "first
 * token" means here what it means in the metrics.
 * Used by the tests, the demo and `infermeter bench`.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher } from 'undici';
import { eventFacts } from '../lib/events.js';
import { MESSAGES_API, RESPONSES_API, typedBodyFacts, typedEventFacts } from '../lib/api-events.js';
import { KEEP, SseFramer } from '../lib/sse.js';
import { prng } from './text.js';
import type { ApiName } from '../record/routes.js';

/** The generation APIs the load speaks (record/routes.ts's names): each its path, its request body, its events. */
const PATHS: Record<ApiName, string> = {
  completions: '/v1/completions', chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses',
};

export interface LoadOptions {
  /** Base URL of the server, e.g. http://127.0.0.1:8000 */
  url: string;
  model?: string;
  route?: ApiName;
  /** How many requests to send in all. */
  requests: number;
  /** Closed loop: this many in flight at all times (default 1 when no rate is given). */
  concurrency?: number;
  /** Open loop: arrivals per second. */
  rate?: number;
  arrivals?: 'poisson' | 'constant';
  maxTokens?: number;
  /** Ask for exactly maxTokens tokens (vLLM's ignore_eos), default true. */
  ignoreEos?: boolean;
  /** false: one JSON body, no SSE (TTFT is then not observed, as the proxy does not time it). Default true. */
  stream?: boolean;
  prompt?: string | ((index: number) => string);
  /** Seeds Poisson inter-arrival times. */
  seed?: number;
  headers?: Record<string, string>;
  dispatcher?: Dispatcher;
}

export interface RequestResult {
  index: number;
  /** When the request was sent, ms after the run started. */
  startMs: number;
  ok: boolean;
  status: number;
  /** null when ok; else e.g. "http 500", "stream error event", the socket error. */
  error: string | null;
  /** Seconds from sending to the first token-bearing chunk; null if none came. */
  ttft: number | null;
  e2e: number;
  /** Token-bearing chunks (several tokens each under speculative decoding). */
  chunks: number;
  /** usage.completion_tokens when the stream had usage, else the chunk count. */
  outputTokens: number;
  promptTokens: number | null;
  /** usage's cached prompt tokens (prompt_tokens_details.cached_tokens, cache_read_input_tokens, ...); null when not reported. */
  cachedTokens: number | null;
  /** (e2e − ttft) / (outputTokens − 1), for ok requests with at least 2 tokens. */
  tpot: number | null;
}

export interface LoadRun {
  results: RequestResult[];
  seconds: number;
}

const DEFAULT_PROMPT = 'Explain how continuous batching schedules requests in an inference server. '.repeat(8);

export async function runLoad(opts: LoadOptions): Promise<LoadRun> {
  const ownAgent = opts.dispatcher ? null : new Agent({ keepAliveTimeout: 10_000, connections: null });
  const dispatcher = opts.dispatcher ?? ownAgent!;
  const t0 = performance.now();
  const results: RequestResult[] = new Array(opts.requests);
  const one = async (i: number) => {
    results[i] = await streamOne(opts, dispatcher, i, t0);
  };
  try {
    if (opts.rate !== undefined) await openLoop(opts, opts.rate, one);
    else await closedLoop(opts.requests, opts.concurrency ?? 1, one);
  } finally {
    await ownAgent?.close();
  }
  return { results, seconds: (performance.now() - t0) / 1000 };
}

async function closedLoop(total: number, concurrency: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < total) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

async function openLoop(opts: LoadOptions, rate: number, one: (i: number) => Promise<void>): Promise<void> {
  const inFlight: Promise<void>[] = [];
  await openArrivals({ rate, arrivals: opts.arrivals ?? 'poisson', seed: opts.seed ?? 1 }, performance.now(), (i) => i < opts.requests, (i) => {
    inFlight.push(one(i));
  });
  await Promise.all(inFlight);
}

export interface ArrivalPlan {
  /** Arrivals per second. */
  rate: number;
  /** poisson: exponential gaps (independent users); constant: evenly spaced. */
  arrivals: 'poisson' | 'constant';
  /** Seeds the Poisson gaps. */
  seed: number;
}

/** Longest sleep between two looks at `more`, so that a stop is seen within it. */
const ARRIVAL_POLL_MS = 250;

/**
 * Open loop: calls send(i) at each arrival of the plan after t0 (a performance.now() time),
 * whatever the server's speed (a late timer sends at once: the schedule, not the timer, keeps
 * the rate). Arrival 0 is at t0. Before each arrival, and while waiting for it, `more(i, atMs)`
 * says whether it is still wanted (atMs: its time after t0). Resolves with the number sent.
 * Used by runLoad, the bench's load steps and the demo's.
 */
export async function openArrivals(plan: ArrivalPlan, t0: number, more: (index: number, atMs: number) => boolean, send: (index: number) => void): Promise<number> {
  const rand = prng(plan.seed);
  let at = 0;
  let i = 0;
  for (; more(i, at); i++) {
    for (let wait = t0 + at - performance.now(); wait > 0; wait = t0 + at - performance.now()) {
      await new Promise((r) => setTimeout(r, Math.min(wait, ARRIVAL_POLL_MS)));
      if (!more(i, at)) return i;
    }
    send(i);
    at += plan.arrivals === 'constant' ? 1000 / plan.rate : (-Math.log(1 - rand()) * 1000) / plan.rate;
  }
  return i;
}

function requestBody(opts: LoadOptions, index: number): string {
  const prompt = typeof opts.prompt === 'function' ? opts.prompt(index) : (opts.prompt ?? DEFAULT_PROMPT);
  const model = opts.model ? { model: opts.model } : {};
  // vLLM's extension; sent only when wanted, since strict servers reject unknown fields.
  const eos = (opts.ignoreEos ?? true) ? { ignore_eos: true } : {};
  const max = opts.maxTokens ?? 128;
  const route = opts.route ?? 'chat';
  const stream = opts.stream ?? true;
  // The Messages and Responses APIs always end a stream with usage: no stream_options there.
  if (route === 'messages') return JSON.stringify({ ...model, max_tokens: max, ...eos, stream, messages: [{ role: 'user', content: prompt }] });
  if (route === 'responses') return JSON.stringify({ ...model, max_output_tokens: max, ...eos, stream, input: prompt });
  const common = { ...model, max_tokens: max, ...eos, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) };
  return JSON.stringify(route === 'completions' ? { ...common, prompt } : { ...common, messages: [{ role: 'user', content: prompt }] });
}

const FACTS: Record<ApiName, (doc: unknown) => ReturnType<typeof eventFacts>> = {
  completions: eventFacts, chat: eventFacts,
  messages: (doc) => typedEventFacts(MESSAGES_API, doc), responses: (doc) => typedEventFacts(RESPONSES_API, doc),
};
/** A whole non-streamed body: OpenAI's choices carry `message`/`text`, which eventFacts reads too. */
const BODY_FACTS: Record<ApiName, (doc: unknown) => ReturnType<typeof eventFacts>> = {
  completions: eventFacts, chat: eventFacts,
  messages: (doc) => typedBodyFacts(MESSAGES_API, doc), responses: (doc) => typedBodyFacts(RESPONSES_API, doc),
};

async function streamOne(opts: LoadOptions, dispatcher: Dispatcher, index: number, t0: number): Promise<RequestResult> {
  const path = PATHS[opts.route ?? 'chat'];
  const factsOf = FACTS[opts.route ?? 'chat'];
  const sent = performance.now();
  const r: RequestResult = {
    index, startMs: sent - t0, ok: false, status: 0, error: null, ttft: null, e2e: 0, chunks: 0, outputTokens: 0, promptTokens: null, cachedTokens: null, tpot: null,
  };
  let usageTokens = -1;
  let streamError = false;
  const usage = (facts: ReturnType<typeof eventFacts>) => {
    if (facts.completionTokens >= 0) usageTokens = facts.completionTokens;
    if (facts.promptTokens >= 0) r.promptTokens = facts.promptTokens;
    if (facts.cachedTokens >= 0) r.cachedTokens = facts.cachedTokens;
  };
  const framer = new SseFramer(false, (buf, s, e) => {
    if (e - s === 6 && buf.toString('latin1', s, e) === '[DONE]') return KEEP;
    let facts;
    try {
      facts = factsOf(JSON.parse(buf.toString('utf8', s, e)));
    } catch {
      return KEEP;
    }
    if (facts.token) {
      if (r.chunks++ === 0) r.ttft = (performance.now() - sent) / 1000;
    }
    if (facts.error) streamError = true;
    usage(facts);
    return KEEP;
  }, () => undefined);
  try {
    const res = await request(opts.url + path, {
      method: 'POST', dispatcher, body: requestBody(opts, index),
      headers: { 'content-type': 'application/json', ...opts.headers },
    });
    r.status = res.statusCode;
    if (opts.stream === false) {
      const text = await res.body.text();
      if (res.statusCode < 400) readBody(text, BODY_FACTS[opts.route ?? 'chat'], usage);
    } else {
      for await (const chunk of res.body) framer.feed(chunk as Buffer);
      framer.end();
    }
    if (res.statusCode >= 400) r.error = `http ${res.statusCode}`;
    else if (streamError) r.error = 'stream error event';
  } catch (err) {
    r.error = (err as Error).message || String(err);
  }
  r.e2e = (performance.now() - sent) / 1000;
  r.outputTokens = usageTokens >= 0 ? usageTokens : r.chunks;
  r.ok = r.error === null;
  if (r.ok && r.ttft !== null && r.outputTokens >= 2) r.tpot = (r.e2e - r.ttft) / (r.outputTokens - 1);
  return r;
}

function readBody(text: string, factsOf: (doc: unknown) => ReturnType<typeof eventFacts>, usage: (f: ReturnType<typeof eventFacts>) => void): void {
  try {
    usage(factsOf(JSON.parse(text)));
  } catch {
    // not JSON: no usage to read; the request still counts by its status
  }
}

export interface Stats {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadSummary {
  requests: number;
  ok: number;
  failed: number;
  seconds: number;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  chunksPerSecond: number;
  ttft: Stats;
  tpot: Stats;
  e2e: Stats;
}

export function summarize(run: LoadRun): LoadSummary {
  const ok = run.results.filter((r) => r.ok);
  const sum = (f: (r: RequestResult) => number) => run.results.reduce((a, r) => a + f(r), 0);
  return {
    requests: run.results.length,
    ok: ok.length,
    failed: run.results.length - ok.length,
    seconds: run.seconds,
    requestsPerSecond: ok.length / run.seconds,
    outputTokensPerSecond: sum((r) => r.outputTokens) / run.seconds,
    chunksPerSecond: sum((r) => r.chunks) / run.seconds,
    ttft: stats(ok.map((r) => r.ttft).filter((v): v is number => v !== null)),
    tpot: stats(ok.map((r) => r.tpot).filter((v): v is number => v !== null)),
    e2e: stats(ok.map((r) => r.e2e)),
  };
}

/** Nearest-rank percentiles; NaN for an empty list. */
export function stats(values: readonly number[]): Stats {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => (v.length === 0 ? NaN : v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)]!);
  const mean = v.length === 0 ? NaN : v.reduce((a, b) => a + b, 0) / v.length;
  return { count: v.length, mean, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: v.length === 0 ? NaN : v[v.length - 1]! };
}
