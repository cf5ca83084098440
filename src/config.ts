/**
 * One typed schema for flags, environment variables and the config file.
 * Precedence: flag > environment > config file > default. A bad value stops startup
 * with the flag's name and what was expected. Config extends the options type of every room
 * (ProxyOptions, CollectorOptions, SideOptions, ...); nothing below this file imports it
 * (docs/architecture.md).
 */
import { readFileSync } from 'node:fs';
import { keptTenantSalt } from './lib/state.js';
import { readBenchLimit, type BottleneckSettings } from './metrics/bottleneck/capacity.js';
import { Command, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { ConfigError, UnreadableFileError } from './lib/errors.js';
import { ENGINES, type EngineKind } from './lib/engines.js';
import { LOG_LEVELS, type LogLevel } from './lib/log.js';
import { DEFAULT_BUCKETS, type BucketSet } from './lib/metric-def.js';
import { markRequired } from './lib/cli-help.js';
import { nearest } from './lib/nearest.js';
import {
  oneOf, parseBool, parseDuration, parseHostPort, parseHttpUrl, parseList, parsePositiveInt, parseSize, type HostPort, positiveDuration, parseBoundedDuration, boundedInt, parseBucketFactor, parseHeaderName, nonEmpty, dmonLetters, wholeSeconds,
} from './lib/parse.js';
import { AUTO_MAX, parseWorkers } from './lib/cpus.js';
import { checkTlsFiles } from './lib/tls.js';
import { parseSloConfig, thresholdsInBucketSet, type SloConfig } from './slo/config.js';
import { traceSettings, type TraceSettings } from './lib/trace-env.js';
import { DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES, parseBounds } from './metrics/breakdown.js';
import { TENANT_SOURCES, type TenantSource } from './proxy/tenant.js';
import { resolveUpstreams, singleUpstream, type UpstreamSpec } from './lib/upstream-spec.js';

/** Engines whose older releases reject an unknown `stream_options` field: no injection unless asked. */
const ENGINES_WITHOUT_STREAM_OPTIONS = new Set<EngineKind>(['tgi']);

/** Plain data only: the config crosses into the metrics worker by structured clone. */
export interface Config extends BottleneckSettings {
  /** The first upstream's URL (the one --upstream, or upstreams[0].url). */
  upstream: string;
  /** Every upstream (the config file's `upstreams:`, or the list of one from --upstream): lib/upstream-spec.ts. */
  upstreams: UpstreamSpec[];
  listen: HostPort;
  metricsListen: HostPort;
  engine: EngineKind;
  injectUsage: boolean;
  models: string[];
  modelsRefresh: number;
  connectTimeout: number;
  headersTimeout: number;
  idleTimeout: number;
  shutdownTimeout: number;
  bodyLimit: number;
  upstreamConnections: number;
  /** Proxy processes: 1 runs the proxy in this process; more run a node:cluster (cluster/). */
  workers: number;
  logLevel: LogLevel;
  nvidiaSmi: string;
  dmonColumns: string;
  gpuInterval: number;
  gpuSource: 'auto' | 'nvidia-smi' | 'dcgm-exporter';
  dcgmExporterUrl: string;
  engineMetrics: string;
  engineInterval: number;
  hostInterval: number;
  collectorGpu: boolean;
  collectorEngine: boolean;
  collectorHost: boolean;
  /** Native histograms: growth factor per bucket (schema = the largest whose base does not exceed it). */
  nativeHistogramBucketFactor: number;
  nativeHistogramMaxBuckets: number;
  classicHistograms: boolean;
  /** Seconds a native series must have lived before the bucket limit may reset it (0: never). */
  nativeHistogramMinResetDuration: number;
  /** /readyz also requires that the upstream answered recently. */
  readyRequiresUpstream: boolean;
  /** /healthz answers 503 when a proxy loop's heartbeat is older than this (seconds). */
  livenessTimeout: number;
  /** POST /-/reload on the metrics listener (as Prometheus' --web.enable-lifecycle). */
  webEnableLifecycle: boolean;
  /** Upstream TLS: file paths ('' = unset), read where the connection pool is built (tls.ts). */
  upstreamCa: string;
  upstreamCert: string;
  upstreamKey: string;
  upstreamInsecureSkipVerify: boolean;
  /** Listener TLS (node:https) when both are set. */
  tlsCert: string;
  tlsKey: string;
  metricsTlsCert: string;
  metricsTlsKey: string;
  webConfigFile: string;
  /** Export the span of every failed or SLO-breaching request, sampled or not. */
  traceKeepFailures: boolean;
  /** Slow-request log (/debug/requests): entries kept per model and list, and over how long. */
  slowLogSize: number;
  slowLogWindow: number;
  /** The live status page (/, /ui) and its JSON (/api/v1/status) on the metrics listener. */
  ui: boolean;
  /** Upper bounds of the prompt_tokens_le classes (ascending, finite; +Inf is implied). */
  promptTokensClasses: number[];
  /** Upper bounds of the in_flight_le bands (ascending, finite; +Inf is implied). */
  inFlightBands: number[];
  tenantFrom: TenantSource;
  tenantHeader: string;
  /** HMAC key for --tenant-from api-key: --tenant-salt, else the one kept in --state-dir (resolveConfig fills it in). */
  tenantSalt: string;
  stateDir: string;
  tenantLimit: number;
  tenantHistograms: boolean;
  configFile: string | null;
  buckets: Record<BucketSet, number[]>;
  slos: SloConfig;
  /** From the standard OTEL_TRACES_* / OTEL_EXPORTER_OTLP_* variables; null: tracing off. */
  tracing: TraceSettings | null;
  /** What this config was resolved from, so that a reload (SIGHUP) resolves it again the same way. */
  sources: ConfigSources;
  /** Where each setting's value came from (flag-table keys, configFile, slos, buckets): --print-config. */
  origins: Record<string, SettingSource>;
}

/** Where a setting's value came from, in the order that decides: flag > env > file > default. */
export type SettingSource = 'flag' | 'env' | 'file' | 'default';

/** The command-line values and INFERMETER_* environment a config was resolved from (plain data). */
export interface ConfigSources {
  cli: Record<string, unknown>;
  env: Record<string, string>;
}

type Scalar = Exclude<keyof Config, 'buckets' | 'slos' | 'configFile' | 'sources' | 'tracing' | 'origins' | 'upstreams' | 'bottleneckBenchLimit'>;

interface OptionSpec {
  key: Scalar;
  flag: string;
  help: string;
  default?: string;
  parse: (value: string) => unknown;
  /** Never printed (--print-config, the startup line): shown as <redacted>. */
  secret?: boolean;
}

/** Every flag in one table; README's flag table is generated from it. */
export const OPTIONS: readonly OptionSpec[] = [
  { key: 'upstream', flag: '--upstream <url>', help: 'inference server base URL (required unless the config file lists upstreams:), http or https, without a path (clients keep their /v1/...), e.g. http://127.0.0.1:8000', parse: parseHttpUrl },
  { key: 'listen', flag: '--listen <host:port>', help: 'proxy listener', default: '0.0.0.0:8080', parse: (v) => parseHostPort(v) },
  { key: 'metricsListen', flag: '--metrics-listen <host:port>', help: 'listener for /metrics (bind to 127.0.0.1 to keep it local)', default: '0.0.0.0:9464', parse: (v) => parseHostPort(v) },
  { key: 'engine', flag: '--engine <kind>', help: `inference engine kind: ${ENGINES.join(', ')}`, default: 'vllm', parse: oneOf(ENGINES) },
  { key: 'injectUsage', flag: '--inject-usage <auto|bool>', help: 'ask streams for usage (stream_options.include_usage) and hide the extra chunk from clients that did not ask; auto = on for every engine but tgi (older TGI rejects the field)', default: 'auto', parse: (v) => (v.trim() === 'auto' ? 'auto' : parseBool(v)) },
  { key: 'models', flag: '--models <list>', help: 'comma-separated model allowlist for the model label (default: what the upstream lists at /v1/models)', default: '', parse: parseList },
  { key: 'modelsRefresh', flag: '--models-refresh <duration>', help: 'how often to re-read the upstream /v1/models', default: '60s', parse: parseDuration },
  { key: 'connectTimeout', flag: '--connect-timeout <duration>', help: 'upstream connect timeout', default: '10s', parse: parseDuration },
  { key: 'headersTimeout', flag: '--headers-timeout <duration>', help: 'upstream time to response headers (covers queueing and prefill)', default: '600s', parse: parseDuration },
  { key: 'idleTimeout', flag: '--idle-timeout <duration>', help: 'longest silence between upstream body bytes', default: '300s', parse: parseDuration },
  { key: 'shutdownTimeout', flag: '--shutdown-timeout <duration>', help: 'on SIGTERM, how long in-flight streams may finish', default: '30s', parse: parseDuration },
  { key: 'bodyLimit', flag: '--body-limit <size>', help: 'largest request body accepted (413 beyond)', default: '32mb', parse: parseSize },
  { key: 'upstreamConnections', flag: '--upstream-connections <n>', help: 'most upstream connections open at once (each in-flight stream holds one)', default: '4096', parse: parsePositiveInt },
  { key: 'workers', flag: '--workers <n|auto>', help: `proxy worker processes sharing the listener (node:cluster), one metrics side for all; auto = the CPUs this process may use (cgroup quota honoured), at most ${AUTO_MAX}`, default: '1', parse: parseWorkers },
  { key: 'logLevel', flag: '--log-level <level>', help: `log level: ${LOG_LEVELS.join(', ')}`, default: 'info', parse: oneOf(LOG_LEVELS) },
  { key: 'nvidiaSmi', flag: '--nvidia-smi <path>', help: 'nvidia-smi binary', default: 'nvidia-smi', parse: (v) => nonEmpty(v) },
  { key: 'dmonColumns', flag: '--dmon-columns <letters>', help: 'nvidia-smi dmon -s column groups', default: 'pucvmet', parse: (v) => dmonLetters(v) },
  { key: 'gpuInterval', flag: '--gpu-interval <duration>', help: 'nvidia-smi dmon sampling interval (whole seconds); also how often dcgm-exporter is scraped', default: '1s', parse: (v) => wholeSeconds(v) },
  { key: 'gpuSource', flag: '--gpu-source <source>', help: 'where GPU metrics come from: nvidia-smi (dmon), dcgm-exporter (scrape --dcgm-exporter-url), or auto (nvidia-smi when it is on PATH, else dcgm-exporter when a URL is set)', default: 'auto', parse: oneOf(['auto', 'nvidia-smi', 'dcgm-exporter'] as const) },
  { key: 'dcgmExporterUrl', flag: '--dcgm-exporter-url <url>', help: 'dcgm-exporter metrics URL, e.g. http://127.0.0.1:9400/metrics', default: '', parse: (v) => (v === '' ? '' : parseHttpUrl(v)) },
  { key: 'engineMetrics', flag: '--engine-metrics <url>', help: 'engine Prometheus endpoint (default: <upstream>/metrics)', default: '', parse: (v) => (v === '' ? '' : parseHttpUrl(v)) },
  { key: 'engineInterval', flag: '--engine-interval <duration>', help: 'engine /metrics scrape interval', default: '5s', parse: parseDuration },
  { key: 'hostInterval', flag: '--host-interval <duration>', help: 'host collector interval', default: '5s', parse: parseDuration },
  { key: 'collectorGpu', flag: '--no-collector.gpu', help: 'turn the GPU (nvidia-smi) collector off', default: 'true', parse: parseBool },
  { key: 'collectorEngine', flag: '--no-collector.engine', help: 'turn the engine /metrics collector off', default: 'true', parse: parseBool },
  { key: 'collectorHost', flag: '--no-collector.host', help: 'turn the host collector off', default: 'true', parse: parseBool },
  { key: 'promptTokensClasses', flag: '--prompt-tokens-classes <list>', help: 'upper bounds of the prompt_tokens_le classes (prompt tokens from usage; +Inf and unknown are added)', default: DEFAULT_PROMPT_CLASSES.join(','), parse: parseBounds },
  { key: 'inFlightBands', flag: '--in-flight-bands <list>', help: 'upper bounds of the in_flight_le bands (generation requests in flight on the machine at the first token; +Inf is added)', default: DEFAULT_IN_FLIGHT_BANDS.join(','), parse: parseBounds },
  { key: 'tenantFrom', flag: '--tenant-from <source>', help: 'where the tenant label comes from: none, header (--tenant-header), api-key (a salted hash of the bearer token or x-api-key header, never the key); default header when --tenant-header is set, else none', default: '', parse: (v) => (v === '' ? '' : oneOf(TENANT_SOURCES)(v)) },
  { key: 'tenantHeader', flag: '--tenant-header <name>', help: 'request header naming the tenant, e.g. x-tenant-id (value cut to 64 characters)', default: '', parse: (v) => parseHeaderName(v) },
  { key: 'tenantSalt', flag: '--tenant-salt <secret>', help: 'HMAC key for --tenant-from api-key (default: a random salt made on first start and kept in --state-dir/tenant-salt); this flag wins over the kept one', default: '', parse: (v) => v, secret: true },
  { key: 'stateDir', flag: '--state-dir <dir>', help: 'directory where infermeter keeps what it makes for itself (tenant-salt); default beside --config (/var/lib/infermeter in the image)', default: '', parse: (v) => v },
  { key: 'tenantLimit', flag: '--tenant-limit <n>', help: 'most tenant label values (first seen keep theirs until restart); later tenants are counted as other', default: '20', parse: parsePositiveInt },
  { key: 'tenantHistograms', flag: '--tenant-histograms <bool>', help: 'put the tenant label on the latency and token histograms too (multiplies their series by up to --tenant-limit + 1)', default: 'false', parse: parseBool },
  { key: 'nativeHistogramBucketFactor', flag: '--native-histogram-bucket-factor <factor>', help: 'native histograms: largest growth from one bucket to the next (1.1 = schema 3, buckets at most 9% wide)', default: '1.1', parse: parseBucketFactor },
  { key: 'classicHistograms', flag: '--classic-histograms <bool>', help: 'false drops the classic buckets of the five latency histograms that are native too (TTFT, TTFO, TPOT, E2E, inter-chunk; +Inf, _sum and _count stay): only where every consumer reads native histograms (Prometheus with native histograms on, or an agent with send_native_histograms); the shipped rules and dashboards read native first, classic otherwise', default: 'true', parse: parseBool },
  { key: 'nativeHistogramMaxBuckets', flag: '--native-histogram-max-buckets <n>', help: 'native histograms: most buckets per series; past it a series resets, widens its zero bucket or halves its resolution', default: '160', parse: parsePositiveInt },
  { key: 'nativeHistogramMinResetDuration', flag: '--native-histogram-min-reset-duration <duration>', help: 'native histograms: a series over its bucket limit resets only after living this long (0 = never reset)', default: '1h', parse: parseDuration },
  { key: 'readyRequiresUpstream', flag: '--ready-requires-upstream', help: '/readyz also requires that the upstream answered within the last 15 s (a request, or a probe of /v1/models every 5 s)', default: 'false', parse: parseBool },
  { key: 'livenessTimeout', flag: '--liveness-timeout <duration>', help: '/healthz answers 503 when a proxy loop (or worker) has not sent its 1 s heartbeat for this long', default: '10s', parse: (v) => positiveDuration(v) },
  { key: 'webEnableLifecycle', flag: '--web.enable-lifecycle', help: 'accept POST /-/reload on the metrics listener (re-reads --config, as SIGHUP does)', default: 'false', parse: parseBool },
  { key: 'upstreamCa', flag: '--upstream-ca <file>', help: 'PEM CA bundle that verifies an https upstream (replaces the system roots for it)', default: '', parse: (v) => v },
  { key: 'upstreamCert', flag: '--upstream-cert <file>', help: 'PEM client certificate for an upstream that requires mTLS (with --upstream-key)', default: '', parse: (v) => v },
  { key: 'upstreamKey', flag: '--upstream-key <file>', help: 'PEM private key of --upstream-cert', default: '', parse: (v) => v },
  { key: 'upstreamInsecureSkipVerify', flag: '--upstream-insecure-skip-verify', help: 'UNSAFE: do not verify the upstream\'s certificate (anyone on the path can read and change traffic); for tests only', default: 'false', parse: parseBool },
  { key: 'tlsCert', flag: '--tls-cert <file>', help: 'PEM certificate: the proxy listener speaks HTTPS (with --tls-key)', default: '', parse: (v) => v },
  { key: 'tlsKey', flag: '--tls-key <file>', help: 'PEM private key of --tls-cert', default: '', parse: (v) => v },
  { key: 'metricsTlsCert', flag: '--metrics-tls-cert <file>', help: 'PEM certificate: the metrics listener speaks HTTPS (with --metrics-tls-key)', default: '', parse: (v) => v },
  { key: 'metricsTlsKey', flag: '--metrics-tls-key <file>', help: 'PEM private key of --metrics-tls-cert', default: '', parse: (v) => v },
  { key: 'webConfigFile', flag: '--web.config.file <file>', help: 'exporter-toolkit web config for the metrics listener: tls_server_config (wins over --metrics-tls-*) and bcrypt basic_auth_users, on every endpoint but /healthz and /readyz; re-read on SIGHUP', default: '', parse: (v) => v },
  { key: 'traceKeepFailures', flag: '--trace-keep-failures <bool>', help: 'with tracing on (OTEL_TRACES_EXPORTER=otlp), also export the span of every failed or SLO-breaching request the sampler left out (decided when the request ends)', default: 'false', parse: parseBool },
  { key: 'slowLogSize', flag: '--slow-log-size <n>', help: 'slow-request log (/debug/requests): requests kept per model in each list (slowest by TTFT, by TPOT, failed)', default: '10', parse: (v) => boundedInt(v, 1, 100) },
  { key: 'slowLogWindow', flag: '--slow-log-window <duration>', help: 'slow-request log: how far back the lists reach', default: '15m', parse: positiveDuration },
  { key: 'bottleneckInterval', flag: '--bottleneck-interval <duration>', help: 'how often the bottleneck verdict (infermeter_bottleneck, the status page) is re-judged', default: '5s', parse: (v) => parseBoundedDuration(v, 0.1, 300) },
  { key: 'bottleneckBench', flag: '--bottleneck-bench <file>', help: 'a bench.json from `infermeter bench` against this server: the bottleneck verdict none then says how much of the load where that bench saw the SLO break is in use', default: '', parse: (v) => v },
  { key: 'bottleneckWindow', flag: '--bottleneck-window <duration>', help: 'the window the bottleneck verdict\'s signals cover (requests, engine and GPU readings)', default: '30s', parse: (v) => parseBoundedDuration(v, 1, 3600) },
  { key: 'ui', flag: '--ui <bool>', help: 'serve the live status page at / and /ui, and its JSON at /api/v1/status, on the metrics listener (read-only)', default: 'true', parse: parseBool },
];

export function envName(spec: OptionSpec): string {
  const long = spec.flag.split(' ')[0]!.replace(/^--(no-)?/, '');
  return 'INFERMETER_' + long.replace(/[.-]/g, '_').toUpperCase();
}

export function flagName(spec: OptionSpec): string {
  return spec.flag.split(' ')[0]!;
}

/**
 * Adds every option to a commander command (used for the proxy command). Defaults and
 * environment variables are declared for help only: the values resolveConfig takes from
 * commander are those typed on the command line (lib/cli-help.ts cliValues), and it reads the
 * environment and the file itself, so one order holds for every setting.
 */
export function addConfigOptions(cmd: Command): Command {
  cmd.addOption(new Option('--config <file>', 'YAML config file (keys as in the flag table, plus slos, buckets and upstreams)').env('INFERMETER_CONFIG'));
  cmd.addOption(new Option('--print-config', 'print the effective configuration, each value with its source (flag, env, file, default; secrets redacted), and exit'));
  for (const spec of OPTIONS) {
    const opt = new Option(spec.flag, spec.help).env(envName(spec));
    // The key, not commander's camelCase of the flag (`--web.enable-lifecycle` would be `web.enableLifecycle`).
    opt.attributeName = () => spec.key;
    if (isSwitch(spec)) opt.default(spec.default === 'true');
    else if (spec.default !== undefined && spec.default !== '') opt.default(spec.default);
    if (spec.default === undefined) markRequired(opt);
    cmd.addOption(opt);
  }
  return cmd;
}

/** A flag without a value: `--web.enable-lifecycle` sets true, `--no-collector.gpu` false. */
function isSwitch(spec: OptionSpec): boolean {
  return !spec.flag.includes('<');
}

/**
 * Resolves the final config from commander's parsed values, the environment and the
 * config file. `cliValues` holds only what was given on the command line.
 */
export function resolveConfig(cliValues: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env, opts: { requireAll?: boolean } = {}): Config {
  const configFile = (cliValues['config'] as string | undefined) ?? env['INFERMETER_CONFIG'] ?? null;
  const origins: Record<string, SettingSource> = {
    configFile: cliValues['config'] !== undefined ? 'flag' : env['INFERMETER_CONFIG'] !== undefined ? 'env' : 'default',
  };
  const file = configFile ? readConfigFile(configFile) : {};
  checkFileKeys(file, configFile);
  const out: Record<string, unknown> = {};
  for (const spec of OPTIONS) {
    const flag = flagName(spec);
    let raw: unknown = cliValues[spec.key];
    let where = flag;
    origins[spec.key] = 'flag';
    if (typeof raw === 'boolean') raw = String(raw); // a switch given on the command line
    if (raw === undefined && env[envName(spec)] !== undefined) {
      raw = env[envName(spec)];
      where = `${flag} (env ${envName(spec)})`;
      origins[spec.key] = 'env';
    }
    if (raw === undefined && spec.key in file) {
      raw = file[spec.key];
      where = `${flag} (config key ${spec.key} in ${configFile})`;
      origins[spec.key] = 'file';
      if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean' && !Array.isArray(raw)) {
        throw new ConfigError(where, `expected a scalar value, got ${JSON.stringify(raw)}`);
      }
      if (Array.isArray(raw)) raw = raw.join(',');
    }
    if (raw === undefined) {
      raw = spec.default;
      origins[spec.key] = 'default';
    }
    if (raw === undefined && (opts.requireAll === false || (spec.key === 'upstream' && file['upstreams'] !== undefined))) continue;
    if (raw === undefined) throw new ConfigError(flag, `is required (${spec.help}); also settable as ${envName(spec)}`);
    try {
      out[spec.key] = spec.parse(String(raw));
    } catch (err) {
      throw new ConfigError(where, (err as Error).message, { cause: err });
    }
  }
  const cfg = out as unknown as Config;
  cfg.configFile = configFile;
  cfg.sources = { cli: plainValues(cliValues), env: infermeterEnv(env) };
  origins['slos'] = 'slos' in file ? 'file' : 'default';
  origins['buckets'] = 'buckets' in file ? 'file' : 'default';
  resolveUpstreamList(cfg, file, configFile);
  if (file['upstreams'] !== undefined) origins['upstream'] = origins['upstreams'] = 'file';
  cfg.origins = origins;
  checkTlsFiles(cfg);
  if (cfg.engineMetrics === '' && cfg.upstream) cfg.engineMetrics = `${cfg.upstream}/metrics`;
  if (cfg.collectorGpu && cfg.gpuSource === 'dcgm-exporter' && cfg.dcgmExporterUrl === '') {
    throw new ConfigError('--dcgm-exporter-url', 'is required with --gpu-source dcgm-exporter: the exporter\'s metrics URL, e.g. http://127.0.0.1:9400/metrics');
  }
  if ((cfg.tenantFrom as string) === '') cfg.tenantFrom = cfg.tenantHeader === '' ? 'none' : 'header';
  if (cfg.tenantFrom === 'api-key' && cfg.tenantSalt === '') cfg.tenantSalt = keptTenantSalt(cfg.stateDir, configFile);
  if (cfg.bottleneckWindow < cfg.bottleneckInterval) throw new ConfigError('--bottleneck-window', `must be at least --bottleneck-interval (${cfg.bottleneckInterval}s): the window holds the readings of several evaluations`);
  if (cfg.tenantFrom === 'header' && cfg.tenantHeader === '') throw new ConfigError('--tenant-header', 'is required with --tenant-from header: the request header naming the tenant, e.g. x-tenant-id');
  if ((cfg.injectUsage as unknown) === 'auto') cfg.injectUsage = !ENGINES_WITHOUT_STREAM_OPTIONS.has(cfg.engine);
  cfg.bottleneckBenchLimit = readBenchLimit(cfg.bottleneckBench);
  cfg.slos = parseSloConfig(file['slos'], `--config ${configFile}: slos`);
  cfg.buckets = resolveBuckets(file['buckets'], cfg.slos, `--config ${configFile}: buckets`);
  cfg.tracing = traceSettings(env);
  for (const c of cfg.slos.promptClasses) {
    if (!cfg.promptTokensClasses.includes(c.promptTokensLe)) {
      throw new ConfigError(`--config ${configFile}: slos.prompt_classes`, `prompt_tokens_le ${c.promptTokensLe} is not one of --prompt-tokens-classes (${cfg.promptTokensClasses.join(', ')})`);
    }
  }
  return cfg;
}

/** Only the keys of the flag table, plus slos, buckets and upstreams: anything else stops with the same message everywhere. */
function checkFileKeys(file: Record<string, unknown>, configFile: string | null): void {
  const known = [...OPTIONS.map((o) => o.key), 'slos', 'buckets', 'upstreams'];
  const unknown = Object.keys(file).filter((k) => !known.includes(k));
  if (unknown.length === 0) return;
  const hints = unknown.flatMap((k) => {
    const near = nearest(k, known);
    return near ? [`${k}: did you mean ${near}?`] : [];
  });
  throw new ConfigError(`--config ${configFile}`, `unknown key(s): ${unknown.join(', ')} (expected keys of the flag table, slos, buckets or upstreams${hints.length ? `; ${hints.join('; ')}` : ''})`);
}

/**
 * `upstreams:` from the file, or the list of one from --upstream. With both, the list wins
 * only if --upstream came from neither flag nor environment (a flag always wins).
 */
function resolveUpstreamList(cfg: Config, file: Record<string, unknown>, configFile: string | null): void {
  const defaults = {
    engine: cfg.engine, engineMetrics: cfg.engineMetrics, connections: cfg.upstreamConnections, connectTimeout: cfg.connectTimeout,
    headersTimeout: cfg.headersTimeout, idleTimeout: cfg.idleTimeout, upstreamCa: cfg.upstreamCa, upstreamCert: cfg.upstreamCert,
    upstreamKey: cfg.upstreamKey, upstreamInsecureSkipVerify: cfg.upstreamInsecureSkipVerify, engines: ENGINES,
  };
  if (file['upstreams'] !== undefined && file['upstream'] !== undefined) {
    throw new ConfigError(`--config ${configFile}: upstreams`, 'give either upstream or upstreams, not both');
  }
  const fromFile = file['upstreams'] !== undefined && cfg.upstream === undefined;
  if (fromFile) {
    cfg.upstreams = resolveUpstreams(file['upstreams'], defaults, `--config ${configFile}: upstreams`);
    cfg.upstream = cfg.upstreams[0]!.url;
    if (cfg.engineMetrics === '') cfg.engineMetrics = cfg.upstreams[0]!.engineMetrics;
    for (const u of cfg.upstreams) checkTlsFiles({ ...cfg, ...u, upstream: u.url });
  } else {
    cfg.upstreams = cfg.upstream ? singleUpstream(cfg.upstream, defaults) : [];
  }
}

/**
 * Reads and validates a config file with exactly the schema `serve` uses (every key, every
 * value), for subcommands that need only part of it (rules: slos; demo; bench). Flags and the
 * environment play no part: the file alone must be valid.
 */
export function loadConfigFile(path: string): Config {
  return resolveConfig({ config: path }, {}, { requireAll: false });
}

function plainValues(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined && (typeof v !== 'object' || v === null)) out[k] = v;
  return out;
}

function infermeterEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('INFERMETER_') && v !== undefined) out[k] = v;
  return out;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UnreadableFileError('--config', `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError('--config', `${path} is not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError('--config', `${path} must hold a YAML mapping`);
  return doc as Record<string, unknown>;
}

/** Configured buckets (or defaults), with every SLO threshold inserted as a boundary. */
function resolveBuckets(raw: unknown, slos: SloConfig, where: string): Record<BucketSet, number[]> {
  const out = {} as Record<BucketSet, number[]>;
  const given = (raw ?? {}) as Record<string, unknown>;
  if (typeof given !== 'object' || Array.isArray(given)) throw new ConfigError(where, 'expected a mapping of bucket set to a list of numbers');
  for (const key of Object.keys(given)) {
    if (!(key in DEFAULT_BUCKETS)) throw new ConfigError(`${where}.${key}`, `unknown bucket set; expected one of ${Object.keys(DEFAULT_BUCKETS).join(', ')}`);
  }
  for (const set of Object.keys(DEFAULT_BUCKETS) as BucketSet[]) {
    const list = given[set] ?? DEFAULT_BUCKETS[set];
    if (!Array.isArray(list) || list.length === 0 || !list.every((n) => typeof n === 'number' && Number.isFinite(n) && n > 0)) {
      throw new ConfigError(`${where}.${set}`, 'expected a non-empty list of positive numbers');
    }
    out[set] = [...new Set([...(list as number[]), ...thresholdsInBucketSet(slos, set)])].sort((a, b) => a - b);
  }
  return out;
}
