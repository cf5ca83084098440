/**
 * The engine collector: scrapes the inference server's own /metrics and re-exports it
 * under stable `infermeter_engine_*` names (aliases.ts), labelled with the engine kind, and
 * publishes the same figures as the upstream's engine reading in the machine snapshot
 * (reading.ts). When a scrape fails every engine series is removed, and the reading with
 * them, so a dead engine never shows its last good values as current; the runner reports
 * the failure (up=0, errors by kind).
 */
import { parsePrometheusText, type ParsedScrape } from '../../lib/prom-text.js';
import { cacheConfigOf } from './cache-config.js';
import { CollectorError, type Collector, type CollectorContext, type CollectorEntry, type CollectorOptions } from '../types.js';
import type { EngineKind } from '../../lib/engines.js';
import { ENGINE_METRICS, aliasTable, type AliasTable, type EngineMetricName } from './aliases.js';
import { sharedFamily, type SnapshotFamily } from './families.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import { normalize, type Snapshot } from './normalize.js';
import { ScrapeClient } from './scrape.js';
import { engineReading } from './reading.js';
import { MachineSnapshot } from '../snapshot.js';
import { upstreamConnectOptions } from '../../lib/tls.js';

export interface EngineCollectorOptions {
  maxBytes?: number;
}

/** Parses one scrape body; throws not_prometheus when it is not exposition text. */
export function parseScrape(text: string): ParsedScrape {
  if (text.trimStart().startsWith('<')) throw new CollectorError('not_prometheus', 'the engine answered HTML/XML, not Prometheus text');
  const scrape = parsePrometheusText(text);
  if (scrape.samples.length === 0 || scrape.invalidLines > scrape.samples.length) {
    throw new CollectorError('not_prometheus', `not Prometheus text (${scrape.samples.length} samples, ${scrape.invalidLines} invalid lines)`);
  }
  return scrape;
}

/** Parses and maps one scrape body; throws not_prometheus when it is not exposition text. */
export function normalizeScrape(text: string, table: AliasTable, engine: string): Snapshot {
  return normalize(parseScrape(text), table, engine);
}

/**
 * One per upstream: its series carry `upstream="<name>"`, and the runner reports its health
 * under `{collector="engine", upstream="<name>"}`.
 */
export class EngineCollector implements Collector {
  readonly name = 'engine';
  readonly labels: Record<string, string>;
  private readonly families = new Map<EngineMetricName, SnapshotFamily>();
  private readonly client: ScrapeClient;
  private readonly table: AliasTable;
  private readonly machine: MachineSnapshot;
  private warnedEmpty = false;

  private readonly upstream: UpstreamSpec;

  /** `upstream`: which one to scrape (default: the first configured, i.e. the one --upstream). */
  constructor(
    private readonly ctx: CollectorContext,
    upstreamOrOptions?: UpstreamSpec | EngineCollectorOptions,
    options: EngineCollectorOptions = {},
  ) {
    const given = upstreamOrOptions && 'url' in upstreamOrOptions ? upstreamOrOptions : null;
    if (!given && upstreamOrOptions) options = upstreamOrOptions as EngineCollectorOptions;
    const upstream = (this.upstream = given ?? ctx.config.upstreams[0]!);
    this.labels = { upstream: upstream.name };
    this.table = aliasTable(upstream.engine as EngineKind) ?? {};
    // The upstream's own /metrics (the default) is reached with the upstream's TLS settings.
    const sameOrigin = new URL(upstream.engineMetrics).origin === new URL(upstream.url).origin;
    this.client = new ScrapeClient(upstream.engineMetrics, options.maxBytes, sameOrigin ? upstreamConnectOptions({ ...upstream, upstream: upstream.url }) : undefined);
    for (const def of ENGINE_METRICS) this.families.set(def.name, sharedFamily(def, ctx.registry));
    this.machine = ctx.machine ?? new MachineSnapshot();
  }

  async collect(signal: AbortSignal): Promise<void> {
    let snapshot: Snapshot;
    let scrape: ParsedScrape;
    try {
      scrape = parseScrape(await this.client.fetch(signal));
      snapshot = normalize(scrape, this.table, this.upstream.engine);
    } catch (err) {
      this.clear(); // last good values are not current any more
      throw err;
    }
    const name = this.upstream.name;
    for (const [metric, family] of this.families) {
      family.set((snapshot.get(metric) ?? []).map((v) => ({ ...v, labels: { ...v.labels, upstream: name } })), name);
    }
    this.machine.setEngine(engineReading(snapshot, name, this.upstream.engine, Date.now(), cacheConfigOf(scrape.samples, this.upstream.engine)));
    if (snapshot.size === 0 && !this.warnedEmpty) {
      this.warnedEmpty = true;
      this.ctx.log.warn({ url: this.upstream.engineMetrics, engine: this.upstream.engine, upstream: name }, 'engine /metrics has none of the known metric names for this engine; check --engine');
    }
  }

  private clear(): void {
    for (const family of this.families.values()) family.clear(this.upstream.name);
    this.machine.removeEngine(this.upstream.name);
  }

  async close(): Promise<void> {
    this.clear();
    await this.client.close();
  }
}

/** The collector-table row; options exist for tests (a smaller body limit). */
export function engineEntry(options: EngineCollectorOptions = {}): CollectorEntry {
  return {
    name: 'engine',
    interval: (config: CollectorOptions) => config.engineInterval,
    // Engines without an alias table (ollama, trtllm, openai) serve no Prometheus metrics we map.
    enabled: (config: CollectorOptions) => config.collectorEngine && scraped(config).length > 0,
    create: (ctx: CollectorContext) => scraped(ctx.config).map((u) => new EngineCollector(ctx, u, options)),
  };
}

function scraped(config: CollectorOptions): UpstreamSpec[] {
  return config.upstreams.filter((u) => aliasTable(u.engine as EngineKind) !== undefined);
}
