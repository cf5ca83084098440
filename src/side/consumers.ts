/**
 * The consumer table: every reader of judged request batches on the metrics side, in the order
 * each batch reaches them. Adding a consumer is one file (a class implementing BatchConsumer,
 * metrics/consumer.ts) and one row here; docs/architecture.md, "Adding a consumer".
 */
import type { ConsumerEntry } from './consumer-types.js';
import { RequestMetrics, exemplarPolicyFrom, nativeOptionsFrom } from '../metrics/prometheus.js';
import { BottleneckMonitor } from '../metrics/bottleneck/live.js';
import { HeadroomMonitor } from '../metrics/headroom/live.js';
import { EnergyMeter } from '../metrics/energy/meter.js';
import { startOtlp } from '../exporters/otlp/start.js';
import { RequestTrail } from '../exporters/trace/trail.js';
import { StatusPage } from '../exporters/ui/status-page.js';
import { slowLogProvider } from '../exporters/ui/slow-requests.js';
import { PromptBlocksStage } from '../metrics/prompt/blocks.js';
import { WorkloadTrace } from '../exporters/workload-trace/trace.js';
import { PrefixCacheMonitor } from '../metrics/prefix/live.js';
import { StreamHealth } from '../metrics/streams/health.js';
import { WasteLedger } from '../metrics/waste/ledger.js';

export const CONSUMERS: readonly ConsumerEntry[] = [
  {
    // Prompt block hashing, once per request, on its own thread: the rows below that read prompt
    // shapes (the workload trace, the prefix-cache model) subscribe to it. On only when one of them is.
    name: 'prompt-blocks',
    enabled: (o) => o.workloadTrace !== '' || o.prefixCache,
    create: ({ options, log }) => new PromptBlocksStage(options, log),
  },
  {
    // --workload-trace: one Mooncake-format line per finished generation request, from the stage above.
    name: 'workload-trace',
    enabled: (o) => o.workloadTrace !== '',
    create: ({ options, registry, log, machine, earlier }) => new WorkloadTrace(options, earlier(PromptBlocksStage)!, registry, log, machine),
  },
  {
    // --prefix-cache: reuse the traffic holds, a cache of the engine's size would find, and the engine found (docs/prefix-cache.md).
    name: 'prefix-cache',
    enabled: (o) => o.prefixCache,
    create: ({ options: o, registry, machine, log, earlier }) => new PrefixCacheMonitor({ registry, machine, settings: o, upstreams: o.upstreams, stage: earlier(PromptBlocksStage)!, log }),
  },
  {
    // Classic and native histograms, the breakdowns, tenants, the SLO counters: /metrics.
    name: 'requests',
    enabled: () => true,
    create: ({ registry, options: o }) => new RequestMetrics(registry, o.buckets, o.engine, o.slos, nativeOptionsFrom(o), exemplarPolicyFrom(o), o),
  },
  {
    // Every stream's ending and its longest silence by phase (docs/stream-health.md).
    name: 'stream-health',
    enabled: () => true,
    create: ({ registry, options: o }) => new StreamHealth(registry, o.buckets),
  },
  {
    // Tokens spent on nothing by cause, the effective goodput, the aborts' propagation and the engines' release (docs/waste.md).
    name: 'waste',
    enabled: () => true,
    create: ({ registry, machine, options: o, log }) => new WasteLedger({ registry, machine, upstreams: o.upstreams, buckets: o.buckets, charsPerToken: o.promptCharsPerToken, log }),
  },
  {
    // Decided by the OTEL_* environment, as every OpenTelemetry SDK does.
    name: 'otlp',
    enabled: () => true,
    create: ({ options, log }) => startOtlp(options, log),
  },
  {
    // Spans, the slow-request log (/debug/requests) and the SLO-breach log line.
    name: 'trail',
    enabled: () => true,
    create: ({ options, log }) => new RequestTrail(options, log),
  },
  {
    name: 'bottleneck',
    enabled: () => true,
    create: ({ registry, machine, options: o, log, models, earlier }) => {
      const prefix = earlier(PrefixCacheMonitor);
      return new BottleneckMonitor({
        registry, machine, slos: o.slos, engine: o.engine, intervalSeconds: o.bottleneckInterval, windowSeconds: o.bottleneckWindow, benchLimit: o.bottleneckBenchLimit, log,
        upstreamsOf: o.upstreams.length > 1 ? (label) => models.upstreamsOf(label) : undefined,
        prefix: prefix ? (label) => prefix.reading(label) : undefined,
      });
    },
  },
  {
    // Capacity per model and load over it (docs/headroom.md): infermeter_capacity_requests_per_second, infermeter_load_ratio.
    name: 'headroom',
    enabled: () => true,
    create: ({ registry, machine, options: o, log, models }) => new HeadroomMonitor({
      registry, machine, slos: o.slos, intervalSeconds: o.bottleneckInterval, windowSeconds: o.headroomWindow, bench: o.bottleneckBenchLimit, log,
      upstreamsOf: o.upstreams.length > 1 ? (label) => models.upstreamsOf(label) : undefined,
    }),
  },
  {
    // Energy and cost per model (docs/energy.md): the GPUs' energy from the machine snapshot, split by the requests' work.
    name: 'energy',
    enabled: (o) => o.collectorGpu,
    create: ({ registry, machine, options: o, log }) => new EnergyMeter({ registry, machine, settings: o, upstreams: o.upstreams, log }),
  },
  {
    // The status page and /api/v1/status; it shows the trail's slow requests, the bottleneck verdicts, the capacities and the energy.
    name: 'ui',
    enabled: (o) => o.ui,
    create: ({ machine, options, log, earlier }) => {
      const page = new StatusPage({ machine, slos: options.slos, log });
      const trail = earlier(RequestTrail);
      if (trail) page.slowRequests = slowLogProvider(trail.slowLog);
      page.bottlenecks = earlier(BottleneckMonitor) ?? null;
      page.capacities = earlier(HeadroomMonitor) ?? null;
      page.energy = earlier(EnergyMeter) ?? null;
      page.prefix = earlier(PrefixCacheMonitor) ?? null;
      page.waste = earlier(WasteLedger) ?? null;
      return page;
    },
  },
];
