/**
 * What /readyz and /healthz answer, from what the proxy loops tell the metrics side: each
 * loop's batches (at least one a second: the heartbeat, sink.ts) and its listener state
 * (listening, then draining). The answer comes from the proxy side's own messages, so a
 * metrics thread that is fine cannot vouch for a proxy loop that is wedged.
 */
import type { Routes } from '../metrics/consumer.js';

export type ProxyState = 'listening' | 'draining';

/** The kubelet's probes: outside the listener's --web.config.file guard (side/listener.ts), as exporter-toolkit leaves them. */
export const PROBE_PATHS: readonly string[] = ['/healthz', '/readyz'];

/** How long an upstream answer keeps --ready-requires-upstream satisfied (three probes). */
export const UPSTREAM_FRESH_MS = 15_000;
/** How often the upstream is probed (GET /v1/models) under --ready-requires-upstream. */
export const UPSTREAM_PROBE_MS = 5_000;

export interface HealthAnswer {
  ok: boolean;
  /** One line for the probe's body and for whoever reads it with curl. */
  reason: string;
}

interface Loop {
  listening: boolean;
  beatAt: number;
}

export class ProxyHealth {
  private readonly loops = new Map<number, Loop>();
  private draining = false;
  private upstreamAt = -Infinity;

  constructor(
    private readonly opts: { livenessTimeoutMs: number; requiresUpstream: boolean },
    private readonly now: () => number = () => performance.now(),
  ) {}

  private loop(source: number): Loop {
    let l = this.loops.get(source);
    if (!l) this.loops.set(source, (l = { listening: false, beatAt: this.now() }));
    return l;
  }

  /** Any message from a proxy loop (a batch, a loop sample) shows it is turning. */
  beat(source: number): void {
    this.loop(source).beatAt = this.now();
  }

  state(source: number, state: ProxyState): void {
    if (state === 'draining') {
      // Draining is the whole instance's: one loop's SIGTERM (or the primary's) takes it out of rotation.
      this.draining = true;
      return;
    }
    const l = this.loop(source);
    l.listening = true;
    l.beatAt = this.now();
  }

  /** A proxy worker is gone; the primary forks another, which announces itself. */
  exited(source: number): void {
    this.loops.delete(source);
  }

  upstreamAnswered(): void {
    this.upstreamAt = this.now();
  }

  readiness(): HealthAnswer {
    if (this.draining) return { ok: false, reason: 'draining: shutting down, in-flight requests are finishing' };
    const listening = [...this.loops.values()].filter((l) => l.listening).length;
    if (listening === 0) return { ok: false, reason: 'starting: the proxy listener is not accepting connections yet' };
    const dead = this.liveness();
    if (!dead.ok) return dead;
    if (this.opts.requiresUpstream && this.now() - this.upstreamAt > UPSTREAM_FRESH_MS) {
      return { ok: false, reason: `upstream: no answer from the upstream in the last ${UPSTREAM_FRESH_MS / 1000} s (--ready-requires-upstream)` };
    }
    return { ok: true, reason: `ready: ${listening} proxy loop(s) listening` };
  }

  liveness(): HealthAnswer {
    const now = this.now();
    for (const [source, l] of this.loops) {
      const age = now - l.beatAt;
      if (age > this.opts.livenessTimeoutMs) {
        return { ok: false, reason: `proxy loop ${source} has sent no heartbeat for ${(age / 1000).toFixed(1)} s (--liveness-timeout ${this.opts.livenessTimeoutMs / 1000}s)` };
      }
    }
    return { ok: true, reason: 'ok' };
  }
}

/** GET /healthz (liveness) and /readyz (readiness): one line of text, never cached. */
export function healthRoutes(health: ProxyHealth): Routes {
  return (app) => {
    for (const path of PROBE_PATHS) {
      app.get(path, (_req, reply) => {
        const a = path === '/healthz' ? health.liveness() : health.readiness();
        return reply.code(a.ok ? 200 : 503).headers({ 'content-type': 'text/plain', 'cache-control': 'no-store' }).send(`${a.reason}\n`);
      });
    }
  };
}
