/**
 * The flag table: every setting a flag, an INFERMETER_* variable or a config-file key can give,
 * one row each. Each row is typed against the key of Config it fills (types.ts FlagValue): its
 * parser must return that key's type, and a key without a row, or a row without a key, does not
 * compile. README's flag table is generated from it (scripts/readme-tables.ts).
 */
import { ENGINES } from '../lib/engines.js';
import { LOG_LEVELS } from '../lib/log.js';
import {
  oneOf, parseBool, parseDuration, parseHostPort, parseHttpUrl, parseList, parsePositiveInt, parseSize, positiveDuration, parseBoundedDuration, boundedInt, parseBucketFactor, parseHeaderName, nonEmpty, dmonLetters, wholeSeconds,
  parseRatio, positiveNumber, parseWholeNumber,
  parsePrice, parseCurrency, parseRate,
} from '../lib/parse.js';
import { AUTO_MAX, parseWorkers } from '../lib/cpus.js';
import { DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES, parseBounds } from '../metrics/breakdown.js';
import { TENANT_SOURCES } from '../proxy/tenant.js';
import { parseTokenizers } from '../metrics/prompt/options.js';
import type { FlagKey, FlagValue } from './types.js';

/** One row: the flag's spelling and help, its default as typed text, and the parser into Config's type. */
export interface Row<K extends FlagKey> {
  flag: string;
  help: string;
  /** As it would be typed; absent: required (the help says so). */
  default?: string;
  parse: (value: string) => FlagValue<K>;
  /** Never printed (--print-config, the startup line): shown as <redacted>. */
  secret?: boolean;
}

/** Every flag in one table, in the order of --help and README. */
const ROWS: { readonly [K in FlagKey]: Row<K> } = {
  upstream: { flag: '--upstream <url>', help: 'inference server base URL (required unless the config file lists upstreams:), http or https, without a path (clients keep their /v1/...), e.g. http://127.0.0.1:8000', parse: parseHttpUrl },
  listen: { flag: '--listen <host:port>', help: 'proxy listener', default: '0.0.0.0:8080', parse: (v) => parseHostPort(v) },
  metricsListen: { flag: '--metrics-listen <host:port>', help: 'listener for /metrics (bind to 127.0.0.1 to keep it local)', default: '0.0.0.0:9464', parse: (v) => parseHostPort(v) },
  engine: { flag: '--engine <kind>', help: `inference engine kind: ${ENGINES.join(', ')}`, default: 'vllm', parse: oneOf(ENGINES) },
  injectUsage: { flag: '--inject-usage <auto|bool>', help: 'ask streams for usage (stream_options.include_usage) and hide the extra chunk from clients that did not ask; auto = on for every engine but tgi (older TGI rejects the field)', default: 'auto', parse: (v) => (v.trim() === 'auto' ? 'auto' : parseBool(v)) },
  models: { flag: '--models <list>', help: 'comma-separated model allowlist for the model label (default: what the upstream lists at /v1/models)', default: '', parse: parseList },
  modelsRefresh: { flag: '--models-refresh <duration>', help: 'how often to re-read the upstream /v1/models', default: '60s', parse: parseDuration },
  connectTimeout: { flag: '--connect-timeout <duration>', help: 'upstream connect timeout', default: '10s', parse: parseDuration },
  headersTimeout: { flag: '--headers-timeout <duration>', help: 'upstream time to response headers (covers queueing and prefill)', default: '600s', parse: parseDuration },
  idleTimeout: { flag: '--idle-timeout <duration>', help: 'longest silence between upstream body bytes: a stream silent this long is cut and counted stalled (infermeter_stream_endings_total)', default: '300s', parse: parseDuration },
  stallAfter: { flag: '--stall-after <duration>', help: 'a stream in flight with no upstream byte for this long counts in infermeter_streams_silent (it is not cut: --idle-timeout does that)', default: '10s', parse: (v) => positiveDuration(v) },
  shutdownTimeout: { flag: '--shutdown-timeout <duration>', help: 'on SIGTERM, how long in-flight streams may finish', default: '30s', parse: parseDuration },
  bodyLimit: { flag: '--body-limit <size>', help: 'largest request body accepted (413 beyond)', default: '32mb', parse: parseSize },
  upstreamConnections: { flag: '--upstream-connections <n>', help: 'most upstream connections open at once (each in-flight stream holds one)', default: '4096', parse: parsePositiveInt },
  workers: { flag: '--workers <n|auto>', help: `proxy worker processes sharing the listener (node:cluster), one metrics side for all; auto = the CPUs this process may use (cgroup quota honoured), at most ${AUTO_MAX}`, default: '1', parse: parseWorkers },
  logLevel: { flag: '--log-level <level>', help: `log level: ${LOG_LEVELS.join(', ')}`, default: 'info', parse: oneOf(LOG_LEVELS) },
  nvidiaSmi: { flag: '--nvidia-smi <path>', help: 'nvidia-smi binary', default: 'nvidia-smi', parse: (v) => nonEmpty(v) },
  dmonColumns: { flag: '--dmon-columns <letters>', help: 'nvidia-smi dmon -s column groups', default: 'pucvmet', parse: (v) => dmonLetters(v) },
  gpuInterval: { flag: '--gpu-interval <duration>', help: 'nvidia-smi dmon sampling interval (whole seconds); also how often dcgm-exporter is scraped', default: '1s', parse: (v) => wholeSeconds(v) },
  gpuSource: { flag: '--gpu-source <source>', help: 'where GPU metrics come from: nvidia-smi (dmon), dcgm-exporter (scrape --dcgm-exporter-url), or auto (nvidia-smi when it is on PATH, else dcgm-exporter when a URL is set)', default: 'auto', parse: oneOf(['auto', 'nvidia-smi', 'dcgm-exporter'] as const) },
  dcgmExporterUrl: { flag: '--dcgm-exporter-url <url>', help: 'dcgm-exporter metrics URL, e.g. http://127.0.0.1:9400/metrics', default: '', parse: (v) => (v === '' ? '' : parseHttpUrl(v)) },
  engineMetrics: { flag: '--engine-metrics <url>', help: 'engine Prometheus endpoint (default: <upstream>/metrics)', default: '', parse: (v) => (v === '' ? '' : parseHttpUrl(v)) },
  engineInterval: { flag: '--engine-interval <duration>', help: 'engine /metrics scrape interval', default: '5s', parse: parseDuration },
  hostInterval: { flag: '--host-interval <duration>', help: 'host collector interval', default: '5s', parse: parseDuration },
  collectorGpu: { flag: '--no-collector.gpu', help: 'turn the GPU (nvidia-smi) collector off', default: 'true', parse: parseBool },
  collectorEngine: { flag: '--no-collector.engine', help: 'turn the engine /metrics collector off', default: 'true', parse: parseBool },
  collectorHost: { flag: '--no-collector.host', help: 'turn the host collector off', default: 'true', parse: parseBool },
  promptTokensClasses: { flag: '--prompt-tokens-classes <list>', help: 'upper bounds of the prompt_tokens_le classes (prompt tokens from usage; +Inf and unknown are added)', default: DEFAULT_PROMPT_CLASSES.join(','), parse: parseBounds },
  inFlightBands: { flag: '--in-flight-bands <list>', help: 'upper bounds of the in_flight_le bands (generation requests in flight on the machine at the first token; +Inf is added)', default: DEFAULT_IN_FLIGHT_BANDS.join(','), parse: parseBounds },
  tenantFrom: { flag: '--tenant-from <source>', help: 'where the tenant label comes from: none, header (--tenant-header), api-key (a salted hash of the bearer token or x-api-key header, never the key); default header when --tenant-header is set, else none', default: '', parse: (v) => (v === '' ? '' : oneOf(TENANT_SOURCES)(v)) },
  tenantHeader: { flag: '--tenant-header <name>', help: 'request header naming the tenant, e.g. x-tenant-id (value cut to 64 characters)', default: '', parse: (v) => parseHeaderName(v) },
  tenantSalt: { flag: '--tenant-salt <secret>', help: 'HMAC key for --tenant-from api-key (default: a random salt made on first start and kept in --state-dir/tenant-salt); this flag wins over the kept one', default: '', parse: (v) => v, secret: true },
  stateDir: { flag: '--state-dir <dir>', help: 'directory where infermeter keeps what it makes for itself (tenant-salt); default beside --config (/var/lib/infermeter in the image)', default: '', parse: (v) => v },
  tenantLimit: { flag: '--tenant-limit <n>', help: 'most tenant label values (first seen keep theirs until restart); later tenants are counted as other', default: '20', parse: parsePositiveInt },
  tenantHistograms: { flag: '--tenant-histograms <bool>', help: 'put the tenant label on the latency and token histograms too (multiplies their series by up to --tenant-limit + 1)', default: 'false', parse: parseBool },
  nativeHistogramBucketFactor: { flag: '--native-histogram-bucket-factor <factor>', help: 'native histograms: largest growth from one bucket to the next (1.1 = schema 3, buckets at most 9% wide)', default: '1.1', parse: parseBucketFactor },
  classicHistograms: { flag: '--classic-histograms <bool>', help: 'false drops the classic buckets of the five latency histograms that are native too (TTFT, TTFO, TPOT, E2E, inter-chunk; +Inf, _sum and _count stay): only where every consumer reads native histograms (Prometheus with native histograms on, or an agent with send_native_histograms); the shipped rules and dashboards read native first, classic otherwise', default: 'true', parse: parseBool },
  nativeHistogramMaxBuckets: { flag: '--native-histogram-max-buckets <n>', help: 'native histograms: most buckets per series; past it a series resets, widens its zero bucket or halves its resolution', default: '160', parse: parsePositiveInt },
  nativeHistogramMinResetDuration: { flag: '--native-histogram-min-reset-duration <duration>', help: 'native histograms: a series over its bucket limit resets only after living this long (0 = never reset)', default: '1h', parse: parseDuration },
  readyRequiresUpstream: { flag: '--ready-requires-upstream', help: '/readyz also requires that the upstream answered within the last 15 s (a request, or a probe of /v1/models every 5 s)', default: 'false', parse: parseBool },
  livenessTimeout: { flag: '--liveness-timeout <duration>', help: '/healthz answers 503 when a proxy loop (or worker) has not sent its 1 s heartbeat for this long', default: '10s', parse: (v) => positiveDuration(v) },
  webEnableLifecycle: { flag: '--web.enable-lifecycle', help: 'accept POST /-/reload on the metrics listener (re-reads --config, as SIGHUP does)', default: 'false', parse: parseBool },
  upstreamCa: { flag: '--upstream-ca <file>', help: 'PEM CA bundle that verifies an https upstream (replaces the system roots for it)', default: '', parse: (v) => v },
  upstreamCert: { flag: '--upstream-cert <file>', help: 'PEM client certificate for an upstream that requires mTLS (with --upstream-key)', default: '', parse: (v) => v },
  upstreamKey: { flag: '--upstream-key <file>', help: 'PEM private key of --upstream-cert', default: '', parse: (v) => v },
  upstreamInsecureSkipVerify: { flag: '--upstream-insecure-skip-verify', help: 'UNSAFE: do not verify the upstream\'s certificate (anyone on the path can read and change traffic); for tests only', default: 'false', parse: parseBool },
  tlsCert: { flag: '--tls-cert <file>', help: 'PEM certificate: the proxy listener speaks HTTPS (with --tls-key)', default: '', parse: (v) => v },
  tlsKey: { flag: '--tls-key <file>', help: 'PEM private key of --tls-cert', default: '', parse: (v) => v },
  metricsTlsCert: { flag: '--metrics-tls-cert <file>', help: 'PEM certificate: the metrics listener speaks HTTPS (with --metrics-tls-key)', default: '', parse: (v) => v },
  metricsTlsKey: { flag: '--metrics-tls-key <file>', help: 'PEM private key of --metrics-tls-cert', default: '', parse: (v) => v },
  webConfigFile: { flag: '--web.config.file <file>', help: 'exporter-toolkit web config for the metrics listener: tls_server_config (wins over --metrics-tls-*) and bcrypt basic_auth_users, on every endpoint but /healthz and /readyz; re-read on SIGHUP', default: '', parse: (v) => v },
  traceKeepFailures: { flag: '--trace-keep-failures <bool>', help: 'with tracing on (OTEL_TRACES_EXPORTER=otlp), also export the span of every failed or SLO-breaching request the sampler left out (decided when the request ends)', default: 'false', parse: parseBool },
  slowLogSize: { flag: '--slow-log-size <n>', help: 'slow-request log (/debug/requests): requests kept per model in each list (slowest by TTFT, by TPOT, failed)', default: '10', parse: (v) => boundedInt(v, 1, 100) },
  slowLogWindow: { flag: '--slow-log-window <duration>', help: 'slow-request log: how far back the lists reach', default: '15m', parse: positiveDuration },
  bottleneckInterval: { flag: '--bottleneck-interval <duration>', help: 'how often the bottleneck verdict (infermeter_bottleneck, the status page) is re-judged', default: '5s', parse: (v) => parseBoundedDuration(v, 0.1, 300) },
  bottleneckBench: { flag: '--bottleneck-bench <file>', help: 'a bench.json from `infermeter bench` against this server: the bottleneck verdict none then says how much of the load where that bench saw the SLO break is in use', default: '', parse: (v) => v },
  bottleneckWindow: { flag: '--bottleneck-window <duration>', help: 'the window the bottleneck verdict\'s signals cover (requests, engine and GPU readings)', default: '30s', parse: (v) => parseBoundedDuration(v, 1, 3600) },
  gpuHourCost: { flag: '--gpu-hour-cost <price>', help: 'what one GPU costs per hour (rented or amortised), in --currency: infermeter_cost_total{kind="gpu_time"} per model; an upstreams: entry may set its own gpuHourCost; 0 = none (docs/energy.md)', default: '0', parse: parsePrice },
  energyPrice: { flag: '--energy-price <price>', help: 'what one kWh of GPU energy costs, in --currency: infermeter_cost_total{kind="energy"} per model; an upstreams: entry may set its own energyPrice; 0 = none', default: '0', parse: parsePrice },
  currency: { flag: '--currency <code>', help: 'what the prices are in, the currency label of infermeter_cost_total (USD, EUR, ...); required with a price', default: 'USD', parse: parseCurrency },
  energyPrefillRate: { flag: '--energy-prefill-rate <tokens/s>', help: 'prompt tokens per second the engine prefills on its GPUs: each second, the prompts prefilled in it take the share of its energy their prefill needed and output tokens share the rest; 0 = by output tokens alone (docs/energy.md: why, and how to read it off your engine)', default: '10000', parse: parseRate },
  headroomWindow: { flag: '--headroom-window <duration>', help: 'the finished requests each headroom estimate (infermeter_capacity_requests_per_second, infermeter_load_ratio) is fitted on', default: '5m', parse: (v) => parseBoundedDuration(v, 10, 3600) },
  ui: { flag: '--ui <bool>', help: 'serve the live status page at / and /ui, and its JSON at /api/v1/status, on the metrics listener (read-only)', default: 'true', parse: parseBool },
  workloadTrace: { flag: '--workload-trace <file>', help: 'record the workload: one JSON line per finished generation request (Mooncake fields: timestamp, input_length, output_length, salted hash_ids; and infermeter\'s own), never a prompt, completion or key; a sidecar FILE.meta.json holds the trace\'s facts (docs/workload-trace.md)', default: '', parse: (v) => v },
  workloadTraceBlockTokens: { flag: '--workload-trace-block-tokens <n>', help: 'tokens per block of hash_ids (Mooncake\'s 512); a multiple of 16 keeps one hashing pass for the prefix-cache model too', default: '512', parse: parsePositiveInt },
  workloadTraceMaxSize: { flag: '--workload-trace-max-size <size>', help: 'rotate the trace file before it grows past this (FILE.1 the newest rotated)', default: '100mb', parse: parseSize },
  workloadTraceMaxFiles: { flag: '--workload-trace-max-files <n>', help: 'trace files kept, the one being written included; the oldest rotated file goes', default: '10', parse: (v) => boundedInt(v, 1, 1000) },
  workloadTraceSample: { flag: '--workload-trace-sample <ratio>', help: 'share of requests traced (each drawn independently, before any hashing); the sidecar and infermeter_workload_trace_requests_total say what was kept', default: '1', parse: parseRatio },
  workloadTraceSessionHeader: { flag: '--workload-trace-session-header <name>', help: 'request header naming the session (e.g. x-session-id): its value, hashed like tenants, is the trace\'s session field', default: '', parse: (v) => parseHeaderName(v) },
  workloadTraceOtlp: { flag: '--workload-trace-otlp <bool>', help: 'also send each trace line as an OTLP log record (OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT and _PROTOCOL)', default: 'false', parse: parseBool },
  prefixCache: { flag: '--prefix-cache <bool>', help: 'model the prefix cache live (docs/prefix-cache.md): per model and upstream, the share of prompt tokens the traffic could reuse, that a cache of the engine\'s size would reuse, and that the engine reused (infermeter_prefix_reuse_ratio), with a verdict and its knob; hashes only, off the proxy loop', default: 'false', parse: parseBool },
  prefixCacheWindow: { flag: '--prefix-cache-window <duration>', help: 'the sliding window the prefix-cache ratios cover (a block counts as reusable when a request in it had it)', default: '5m', parse: (v) => parseBoundedDuration(v, 10, 3600) },
  prefixCacheSample: { flag: '--prefix-cache-sample <ratio>', help: 'share of requests the prefix-cache model hashes (each drawn independently); under load the hashing thread sheds more, and infermeter_prefix_cache_requests_total says what it kept', default: '1', parse: parseRatio },
  prefixCacheBlockSize: { flag: '--prefix-cache-block-size <tokens>', help: 'tokens per KV block where the engine does not report its own (vLLM\'s vllm:cache_config_info does; 16 is vLLM\'s on CUDA)', default: '16', parse: parsePositiveInt },
  prefixCacheTokens: { flag: '--prefix-cache-tokens <n>', help: 'the engine\'s KV cache in tokens where it does not report it (vLLM: num_gpu_blocks × block_size; SGLang: max_total_num_tokens); 0 = read from the engine, else no engine-size figure', default: '0', parse: parseWholeNumber },
  tokenizers: { flag: '--tokenizers <list>', help: 'tokenizers for exact prompt blocks: name=path entries, name a model or an upstream, path a tokenizer.json, a directory holding one, or a GGUF model file; a bare path serves every model (default: the Hugging Face cache, else blocks are cut from characters)', default: '', parse: parseTokenizers },
  hfHubCache: { flag: '--hf-hub-cache <dir>', help: 'Hugging Face hub cache where the engine\'s tokenizer files are looked up by model name (default: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub; none = do not look)', default: '', parse: (v) => v },
  promptCharsPerToken: { flag: '--prompt-chars-per-token <n>', help: 'where no tokenizer is found, prompt blocks are cut every block × this many characters; the waste ledger also takes a refused or aborted request\'s prompt tokens as its body\'s bytes over this where no usage came', default: '4', parse: positiveNumber },
  promptHashSalt: { flag: '--prompt-hash-salt <secret>', help: 'key of the prompt block ids (default: a random salt made on first start and kept in --state-dir/prompt-salt, else beside --config or the trace file); give every node one salt for traces that share ids', default: '', parse: (v) => v, secret: true },
};

/** A row with its key, as the readers of the whole table (--print-config, README, reload) take it. */
export type OptionSpec = Row<FlagKey> & { key: FlagKey };

/** The table's keys in its order: exactly FlagKey, since ROWS's type admits no other and misses none. */
export const FLAG_KEYS = Object.keys(ROWS) as FlagKey[];

/** The row of `key`, typed by it: resolution parses through this, so each value keeps its key's type. */
export function rowOf<K extends FlagKey>(key: K): Row<K> {
  return ROWS[key];
}

export const OPTIONS: readonly OptionSpec[] = FLAG_KEYS.map((key) => ({ key, ...rowOf(key) }));

export function envName(spec: Pick<OptionSpec, 'flag'>): string {
  const long = spec.flag.split(' ')[0]!.replace(/^--(no-)?/, '');
  return 'INFERMETER_' + long.replace(/[.-]/g, '_').toUpperCase();
}

export function flagName(spec: Pick<OptionSpec, 'flag'>): string {
  return spec.flag.split(' ')[0]!;
}

/** A flag without a value: `--web.enable-lifecycle` sets true, `--no-collector.gpu` false. */
export function isSwitch(spec: Pick<OptionSpec, 'flag'>): boolean {
  return !spec.flag.includes('<');
}
