/**
 * The demo's load: each step an open-loop schedule of its own length (openArrivals, as the
 * bench's steps), steps back to back on one clock, so that a slow stream never holds up the
 * next step; streams still running when a step ends finish during the next one, or in the
 * drain after the last. Each arrival goes to one generation API, drawn by the mix's shares.
 */
import type { Dispatcher } from 'undici';
import { openArrivals, runLoad } from '../sim/load.js';
import { prng } from '../sim/text.js';
import type { ApiName } from '../record/routes.js';

/** The demo's traffic: every generation API, chat the most (shares of the offered rate). */
const DEMO_MIX: readonly (readonly [ApiName, number])[] = [['chat', 0.4], ['messages', 0.3], ['responses', 0.2], ['completions', 0.1]];

export const DEMO_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

export interface DemoLoadOptions {
  /** The proxy's base URL. */
  url: string;
  dispatcher: Dispatcher;
  arrivals: 'poisson' | 'constant';
}

export class DemoLoad {
  /** Requests sent and finished (any outcome) since the start. */
  sent = 0;
  finished = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: DemoLoadOptions) {}

  get inFlight(): number {
    return this.sent - this.finished;
  }

  /** Sends at `rate` from startAt (a performance.now() time) for `seconds`, or until stopped(). */
  async offer(rate: number, startAt: number, seconds: number, seed: number, stopped: () => boolean): Promise<void> {
    const pick = prng(seed * 2 + 1); // its own sequence, apart from the arrival gaps'
    const endMs = seconds * 1000;
    await openArrivals({ rate, arrivals: this.o.arrivals, seed: seed * 2 }, startAt, (_i, atMs) => atMs < endMs && !stopped(), () => this.sendOne(apiOf(pick())));
  }

  /** Resolves once nothing is in flight. */
  idle(): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }

  private sendOne(route: ApiName): void {
    this.sent++;
    void runLoad({ url: this.o.url, model: DEMO_MODEL, route, requests: 1, maxTokens: 128, dispatcher: this.o.dispatcher })
      .catch(() => undefined)
      .finally(() => {
        this.finished++;
        if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
  }
}

/** The API whose share of the mix holds r (0 ≤ r < 1). */
function apiOf(r: number): ApiName {
  let upTo = 0;
  for (const [api, share] of DEMO_MIX) {
    upTo += share;
    if (r < upTo) return api;
  }
  return DEMO_MIX[DEMO_MIX.length - 1]![0];
}
