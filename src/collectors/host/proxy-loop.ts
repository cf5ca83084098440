/**
 * The proxy thread's event-loop delay. Collectors run in the metrics worker, whose loop
 * says nothing about the proxy's, so the delay is measured on the main thread with
 * monitorProxyLoop() (BatchingSink does this on every proxy loop) and handed to the
 * metrics side, which sets the gauges (and the machine snapshot's proxy-loop part) through
 * ProxyLoopMetrics.
 */
import type { Gauge, Registry } from 'prom-client';
import { gauge } from '../../lib/metric-def.js';
import { hostDef } from './metrics.js';
import type { ProxyLoopSample } from '../../record/loop.js';
import { MachineSnapshot } from '../snapshot.js';

/**
 * The metrics-side gauges, set from samples passed in. Under --workers every proxy loop
 * sends its own: the delay gauges show the worst loop, the heap gauge their sum.
 */
export class ProxyLoopMetrics {
  private readonly delay: Gauge;
  private readonly heap: Gauge;
  private readonly latest = new Map<number, ProxyLoopSample>();

  constructor(
    registry: Registry,
    private readonly machine = new MachineSnapshot(),
  ) {
    this.delay = gauge(registry, hostDef('infermeter_proxy_event_loop_delay_seconds'));
    this.heap = gauge(registry, hostDef('infermeter_proxy_heap_used_bytes'));
  }

  update(source: number, s: ProxyLoopSample): void {
    this.latest.set(source, s);
    this.publish();
  }

  /** A proxy loop that is gone no longer counts. */
  remove(source: number): void {
    if (this.latest.delete(source)) this.publish();
  }

  private publish(): void {
    let p50 = 0;
    let p99 = 0;
    let max = 0;
    let heap = 0;
    for (const s of this.latest.values()) {
      p50 = Math.max(p50, s.p50);
      p99 = Math.max(p99, s.p99);
      max = Math.max(max, s.max);
      heap += s.heapUsedBytes;
    }
    this.delay.set({ stat: 'p50' }, p50);
    this.delay.set({ stat: 'p99' }, p99);
    this.delay.set({ stat: 'max' }, max);
    this.heap.set(heap);
    this.machine.setProxyLoop({ delayP50Seconds: p50, delayP99Seconds: p99, delayMaxSeconds: max, heapUsedBytes: heap, at: Date.now() });
  }
}
