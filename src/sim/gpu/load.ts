/**
 * Where the fake's load comes from: a running infermeter simulator (or any vLLM server),
 * read from its /metrics the way a GPU would feel it — requests running make the SMs busy,
 * the KV cache fill shows as memory used — or a fixed level when no URL is given.
 */
import { parsePrometheusText } from '../../lib/prom-text.js';
import type { Load } from './models.js';

/** Running requests at which the fake GPU reads as saturated. */
const SATURATING_REQUESTS = 16;

export function loadFromMetrics(text: string): Load {
  const { samples } = parsePrometheusText(text);
  let running = 0;
  let kv = 0;
  for (const s of samples) {
    if (s.name === 'vllm:num_requests_running') running += s.value;
    // vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc; both are 0-1 despite the name.
    else if (s.name === 'vllm:kv_cache_usage_perc' || s.name === 'vllm:gpu_cache_usage_perc') kv = Math.max(kv, s.value);
  }
  const busy = running <= 0 ? 0 : Math.min(1, 0.35 + 0.65 * (running / SATURATING_REQUESTS));
  return { busy, kvCache: Number.isFinite(kv) ? kv : 0 };
}

export class LoadSource {
  private current: Load;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly simUrl: string | null,
    fixed: number,
  ) {
    this.current = { busy: fixed, kvCache: fixed };
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
      if (res.ok) this.current = loadFromMetrics(await res.text());
    } catch {
      // simulator not up (yet): keep the last reading, like a GPU that does not care
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
