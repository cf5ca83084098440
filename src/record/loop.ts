/**
 * The proxy thread's event-loop delay and heap, measured on the proxy thread itself (the metrics
 * side's loop says nothing about it) and carried to the metrics side beside the record batches;
 * collectors/host/proxy-loop.ts turns the samples into gauges there.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** Plain data (crosses threads by structured clone). Delays in seconds. */
export interface ProxyLoopSample {
  p50: number;
  p99: number;
  max: number;
  heapUsedBytes: number;
}

export interface ProxyLoopMonitor {
  /** Delay since the previous sample (the window restarts on each call). */
  sample(): ProxyLoopSample;
  stop(): void;
}

/** Starts measuring the calling thread's event-loop delay (call it on the proxy thread). */
export function monitorProxyLoop(resolutionMs = 10): ProxyLoopMonitor {
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  h.enable();
  return {
    sample() {
      const empty = h.count === 0;
      // The histogram records the time between the monitor's own timer ticks, so every value
      // includes the resolution itself: subtract it to report the delay alone.
      const delay = (ns: number) => (empty ? 0 : Math.max(0, ns / 1e9 - resolutionMs / 1000));
      const s: ProxyLoopSample = {
        p50: delay(h.percentile(50)),
        p99: delay(h.percentile(99)),
        max: delay(h.max),
        heapUsedBytes: getHeapStatistics().used_heap_size,
      };
      h.reset();
      return s;
    },
    stop() {
      h.disable();
    },
  };
}
