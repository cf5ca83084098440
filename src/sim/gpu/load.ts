/**
 * Where the fake's load comes from: a running infermeter simulator (or any vLLM server),
 * read from its /metrics the way a GPU would feel it — requests running make the SMs busy
 * and, as the decode batch, the DRAM; prompt tokens processed per second (prefill) fill the
 * SMs and tensor cores; the KV cache fill shows as memory used — or a fixed level when no
 * URL is given.
 */
import { parsePrometheusText } from '../../lib/prom-text.js';
import type { Load } from './models.js';

/** Running requests at which the fake GPU reads as saturated. */
const SATURATING_REQUESTS = 16;
/** Prompt tokens per second at which prefill saturates the fake GPU (the simulator's default --prefill-tps). */
const SATURATING_PREFILL_TPS = 8000;

/** What one read of a vLLM /metrics holds that the fake cares about. */
export interface SimReading {
  running: number;
  kvCache: number;
  /** vllm:prompt_tokens_total, a counter (prefill rate comes from two readings). */
  promptTokens: number;
}

export function readSimMetrics(text: string): SimReading {
  const { samples } = parsePrometheusText(text);
  let running = 0;
  let kv = 0;
  let promptTokens = 0;
  for (const s of samples) {
    if (s.name === 'vllm:num_requests_running') running += s.value;
    // vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc; both are 0-1 despite the name.
    else if (s.name === 'vllm:kv_cache_usage_perc' || s.name === 'vllm:gpu_cache_usage_perc') kv = Math.max(kv, s.value);
    else if (s.name === 'vllm:prompt_tokens_total') promptTokens += s.value;
  }
  return { running, kvCache: Number.isFinite(kv) ? kv : 0, promptTokens };
}

/**
 * The load one reading shows; `previous` (the reading `seconds` earlier) gives the prefill
 * rate, which is 0 without one.
 */
export function loadFromMetrics(text: string, previous?: { reading: SimReading; seconds: number }): Load {
  return loadFrom(readSimMetrics(text), previous);
}

export function loadFrom(r: SimReading, previous?: { reading: SimReading; seconds: number }): Load {
  const busy = r.running <= 0 ? 0 : Math.min(1, 0.35 + 0.65 * (r.running / SATURATING_REQUESTS));
  const decode = Math.min(1, Math.max(0, r.running / SATURATING_REQUESTS));
  let prefill = 0;
  if (previous && previous.seconds > 0) {
    const tps = Math.max(0, r.promptTokens - previous.reading.promptTokens) / previous.seconds;
    prefill = Math.min(1, tps / SATURATING_PREFILL_TPS);
  }
  return { busy, kvCache: r.kvCache, decode, prefill };
}

export class LoadSource {
  private current: Load;
  private timer: NodeJS.Timeout | null = null;
  private last: { reading: SimReading; at: number } | null = null;

  constructor(
    private readonly simUrl: string | null,
    fixed: number,
  ) {
    this.current = { busy: fixed, kvCache: fixed, decode: fixed, prefill: fixed };
  }

  get load(): Load {
    return this.current;
  }

  /** Reads once now (bounded), then keeps reading in the background every periodMs. */
  async start(periodMs: number): Promise<void> {
    if (!this.simUrl) return;
    await this.poll(Math.min(1000, periodMs));
    this.timer = setInterval(() => void this.poll(periodMs), periodMs);
    this.timer.unref();
  }

  async poll(timeoutMs: number): Promise<void> {
    try {
      const res = await fetch(`${this.simUrl}/metrics`, { signal: AbortSignal.timeout(Math.max(100, timeoutMs)) });
      if (!res.ok) return;
      const reading = readSimMetrics(await res.text());
      const at = performance.now();
      this.current = loadFrom(reading, this.last ? { reading: this.last.reading, seconds: (at - this.last.at) / 1000 } : undefined);
      this.last = { reading, at };
    } catch {
      // simulator not up (yet): keep the last reading, like a GPU that does not care
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** Each GPU's load source: its group's simulator (FAKE_NVIDIA_SMI_SIM_URLS), else the default one. */
export class GpuLoads {
  private readonly sources: LoadSource[];
  private readonly byGpu = new Map<number, LoadSource>();

  constructor(private readonly fallback: LoadSource, groups: readonly { gpus: readonly number[]; url: string }[], fixed: number) {
    this.sources = [fallback];
    for (const g of groups) {
      const source = new LoadSource(g.url, fixed);
      this.sources.push(source);
      for (const gpu of g.gpus) this.byGpu.set(gpu, source);
    }
  }

  of(gpu: number): Load {
    return (this.byGpu.get(gpu) ?? this.fallback).load;
  }

  async start(periodMs: number): Promise<void> {
    await Promise.all(this.sources.map((s) => s.start(periodMs)));
  }

  stop(): void {
    for (const s of this.sources) s.stop();
  }
}
