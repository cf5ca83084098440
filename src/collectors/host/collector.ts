/**
 * The host collector: CPU, load, memory and network of the machine (systeminformation,
 * which reads /proc on Linux) and the daemon's own process figures; the same figures are
 * the host and process parts of the machine snapshot. A failed read leaves the last ones
 * (gauges and snapshot alike), whose `at` then says how old they are.
 */
import { loadavg } from 'node:os';
import si from 'systeminformation';
import type { Gauge } from 'prom-client';
import { gauge } from '../../lib/metric-def.js';
import { CollectorError, type Collector, type CollectorContext, type CollectorEntry, type CollectorOptions } from '../types.js';
import { SnapshotFamily } from '../engine/families.js';
import { hostDef } from './metrics.js';
import { MachineSnapshot, type NetworkReading } from '../snapshot.js';

export class HostCollector implements Collector {
  readonly name = 'host';
  private readonly cpu: Gauge;
  private readonly load: [Gauge, Gauge, Gauge];
  private readonly memUsed: Gauge;
  private readonly memTotal: Gauge;
  private readonly rx: Gauge;
  private readonly tx: Gauge;
  private readonly rss: Gauge;
  private readonly heap: Gauge;
  private readonly cpuSeconds: SnapshotFamily;
  private readonly machine: MachineSnapshot;

  constructor(ctx: CollectorContext) {
    const r = ctx.registry;
    this.machine = ctx.machine ?? new MachineSnapshot();
    this.cpu = gauge(r, hostDef('infermeter_host_cpu_utilization_ratio'));
    this.load = [gauge(r, hostDef('infermeter_host_load1')), gauge(r, hostDef('infermeter_host_load5')), gauge(r, hostDef('infermeter_host_load15'))];
    this.memUsed = gauge(r, hostDef('infermeter_host_memory_used_bytes'));
    this.memTotal = gauge(r, hostDef('infermeter_host_memory_total_bytes'));
    this.rx = gauge(r, hostDef('infermeter_host_network_receive_bytes_per_second'));
    this.tx = gauge(r, hostDef('infermeter_host_network_transmit_bytes_per_second'));
    this.rss = gauge(r, hostDef('infermeter_process_resident_memory_bytes'));
    this.heap = gauge(r, hostDef('infermeter_process_heap_used_bytes'));
    // A counter whose value is read, not incremented: prom-client's Counter cannot be set.
    this.cpuSeconds = new SnapshotFamily(hostDef('infermeter_process_cpu_seconds_total'), r);
  }

  async collect(): Promise<void> {
    this.collectProcess(); // cannot fail, so a systeminformation failure leaves it current
    let load: si.Systeminformation.CurrentLoadData;
    let mem: si.Systeminformation.MemData;
    let net: si.Systeminformation.NetworkStatsData[];
    try {
      [load, mem, net] = await Promise.all([si.currentLoad(), si.mem(), si.networkStats()]);
    } catch (err) {
      throw new CollectorError('systeminformation', `reading host figures failed: ${(err as Error).message}`, { cause: err });
    }
    const cpu = clamp01(load.currentLoad / 100);
    const [load1, load5, load15] = loadavg() as [number, number, number];
    this.cpu.set(cpu);
    [load1, load5, load15].forEach((v, i) => this.load[i]!.set(v));
    this.memTotal.set(mem.total);
    this.memUsed.set(mem.total - mem.available);
    this.rx.reset();
    this.tx.reset();
    const network: NetworkReading[] = [];
    for (const n of net) {
      // null on the first call: a rate needs two readings
      const rx = typeof n.rx_sec === 'number' && n.rx_sec >= 0 ? n.rx_sec : null;
      const tx = typeof n.tx_sec === 'number' && n.tx_sec >= 0 ? n.tx_sec : null;
      if (rx !== null) this.rx.set({ device: n.iface }, rx);
      if (tx !== null) this.tx.set({ device: n.iface }, tx);
      network.push({ device: n.iface, receiveBytesPerSecond: rx, transmitBytesPerSecond: tx });
    }
    this.machine.setHost({ cpuUtilization: cpu, load1, load5, load15, memoryUsedBytes: mem.total - mem.available, memoryTotalBytes: mem.total, network, at: Date.now() });
  }

  private collectProcess(): void {
    const mem = process.memoryUsage();
    this.rss.set(mem.rss);
    this.heap.set(mem.heapUsed);
    const cpu = process.cpuUsage();
    const cpuSecondsTotal = (cpu.user + cpu.system) / 1e6;
    this.cpuSeconds.set([{ labels: {}, value: cpuSecondsTotal }]);
    this.machine.setProcess({ residentMemoryBytes: mem.rss, heapUsedBytes: mem.heapUsed, cpuSecondsTotal, at: Date.now() });
  }
}

function clamp01(v: number): number {
  return Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0;
}

export function hostEntry(): CollectorEntry {
  return {
    name: 'host',
    interval: (config: CollectorOptions) => config.hostInterval,
    enabled: (config: CollectorOptions) => config.collectorHost,
    create: (ctx: CollectorContext) => new HostCollector(ctx),
  };
}
