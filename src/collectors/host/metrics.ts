import type { MetricDef } from '../../lib/metric-def.js';

/**
 * Host and process metrics: a few gauges for the dashboards' "was the box busy" panels;
 * node_exporter owns the full host picture. The `infermeter_proxy_*` pair is measured on
 * the proxy's main thread (proxy-loop.ts) and passed in, since collectors run in the
 * metrics worker thread.
 */
export const HOST_METRICS = [
  { name: 'infermeter_host_cpu_utilization_ratio', type: 'gauge', unit: '1', labels: [], source: 'host',
    help: 'Share of all CPUs\' time spent busy (0-1) since the previous collection.' },
  { name: 'infermeter_host_load1', type: 'gauge', unit: '1', labels: [], source: 'host',
    help: '1-minute load average.' },
  { name: 'infermeter_host_load5', type: 'gauge', unit: '1', labels: [], source: 'host',
    help: '5-minute load average.' },
  { name: 'infermeter_host_load15', type: 'gauge', unit: '1', labels: [], source: 'host',
    help: '15-minute load average.' },
  { name: 'infermeter_host_memory_used_bytes', type: 'gauge', unit: 'By', labels: [], source: 'host',
    help: 'Memory in use: total minus available (page cache and reclaimable buffers not counted).' },
  { name: 'infermeter_host_memory_total_bytes', type: 'gauge', unit: 'By', labels: [], source: 'host',
    help: 'Total physical memory.' },
  { name: 'infermeter_host_network_receive_bytes_per_second', type: 'gauge', unit: 'By/s', labels: ['device'], source: 'host',
    help: 'Bytes received per second on the default network interface, since the previous collection.' },
  { name: 'infermeter_host_network_transmit_bytes_per_second', type: 'gauge', unit: 'By/s', labels: ['device'], source: 'host',
    help: 'Bytes sent per second on the default network interface, since the previous collection.' },
  { name: 'infermeter_process_resident_memory_bytes', type: 'gauge', unit: 'By', labels: [], source: 'process',
    help: 'Resident set size of the infermeter process (all threads).' },
  { name: 'infermeter_process_cpu_seconds_total', type: 'counter', unit: 's', labels: [], source: 'process',
    help: 'CPU time (user + system) used by the infermeter process (all threads).' },
  { name: 'infermeter_process_heap_used_bytes', type: 'gauge', unit: 'By', labels: [], source: 'process',
    help: 'V8 heap in use by the metrics thread (registry, collectors, /metrics); the proxy thread\'s is infermeter_proxy_heap_used_bytes.' },
  // Label `stat`, not `quantile`: promtool rejects `quantile` on anything but a summary.
  { name: 'infermeter_proxy_event_loop_delay_seconds', type: 'gauge', unit: 's', labels: ['stat'], source: 'process',
    help: 'Event-loop delay of the proxy thread over the last sampling window, stat p50, p99 or max. Every stream in flight waits this long.' },
  { name: 'infermeter_proxy_heap_used_bytes', type: 'gauge', unit: 'By', labels: [], source: 'process',
    help: 'V8 heap in use by the proxy (main) thread.' },
] as const satisfies readonly MetricDef[];

type Def = (typeof HOST_METRICS)[number];
export function hostDef<N extends Def['name']>(name: N): Extract<Def, { name: N }> {
  return HOST_METRICS.find((d) => d.name === name) as Extract<Def, { name: N }>;
}
