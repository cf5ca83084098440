// The modules `npm run test:mutation` mutates, one Stryker run each (docs/mutation-testing.md).
// Only pure code where a wrong operator is a wrong number: each entry names the source files
// Stryker mutates and the compiled unit tests that must kill the mutants. Paths follow the
// room layout (docs/architecture.md); a test listed here must run in well under a second or
// two, since it runs once per mutant: test/unit/metrics/breakdown.test.ts starts proxies (9 s a run)
// and stays out; the pure parts it covers have their own tests here.
export const MODULES = [
  {
    name: 'slo-judge',
    what: 'SLO judging: thresholds per model and prompt class, value <= threshold is good',
    mutate: ['src/slo/judge.ts', 'src/slo/config.ts'],
    tests: ['test/unit/slo/judge.test.ts', 'test/unit/ops/rules-generate.test.ts', 'test/unit/exporters/otlp-recorder.test.ts'],
  },
  {
    name: 'slo-windows',
    what: 'SLO rule windows: Prometheus durations and --test-windows scaling',
    mutate: ['src/slo/windows.ts'],
    tests: ['test/unit/slo/windows.test.ts', 'test/unit/ops/rules-generate.test.ts'],
  },
  {
    name: 'histogram-buckets',
    what: 'classic bucket maths: le buckets, cumulative counts, sum and count',
    mutate: ['src/metrics/histogram.ts'],
    tests: ['test/unit/metrics/histogram.test.ts', 'test/unit/exporters/openmetrics.test.ts'],
  },
  {
    name: 'native-histogram',
    what: 'native (exponential) histogram maths: schema, bucket index and bounds, spans',
    mutate: ['src/metrics/native.ts'],
    tests: ['test/unit/metrics/native-histogram.test.ts', 'test/unit/demo/native-quantile.test.ts'],
  },
  {
    name: 'record-codec',
    what: 'the record codec between the proxy and the metrics side',
    mutate: ['src/record/codec.ts'],
    tests: ['test/unit/record/codec.test.ts', 'test/unit/record/codec-reserve.test.ts'],
  },
  {
    name: 'tenant-prompt-class',
    what: 'tenant labels (header, HMAC of the API key) and prompt-class / concurrency bands',
    mutate: ['src/proxy/tenant.ts', 'src/metrics/breakdown.ts'],
    tests: ['test/unit/proxy/tenant.test.ts', 'test/unit/metrics/breakdown-bands.test.ts'],
  },
  {
    name: 'parse',
    what: 'duration, size, bool, integer, list and address flag parsing',
    mutate: ['src/lib/parse.ts'],
    tests: ['test/unit/lib/parse.test.ts', 'test/unit/config.test.ts'],
  },
  {
    name: 'dmon',
    what: 'the nvidia-smi dmon parser (columns by header name, no-value markers, units)',
    mutate: ['src/collectors/gpu/dmon.ts'],
    tests: ['test/unit/collectors/gpu-dmon.test.ts'],
  },
  {
    name: 'web-guard',
    what: 'the metrics listener\'s guard: basic auth against bcrypt hashes (unknown users too), client-certificate rules per request',
    mutate: ['src/side/web-config.ts'],
    tests: ['test/unit/side/web-config.test.ts'],
  },
  {
    name: 'web-config',
    what: '--web.config.file: the exporter-toolkit keys, defaults, client auth types and the listener\'s TLS options',
    mutate: ['src/lib/web-config.ts'],
    tests: ['test/unit/side/web-config.test.ts', 'test/unit/lib/web-config.test.ts'],
  },
  {
    name: 'upstreams',
    what: 'the upstream set and router: by listed model, replicas by fewest in flight, down ones avoided, the merged model list',
    mutate: ['src/proxy/upstreams.ts'],
    tests: ['test/unit/proxy/upstreams.test.ts', 'test/unit/proxy/upstreams-lists.test.ts'],
  },
  {
    name: 'bottleneck',
    what: 'the bottleneck verdict: the rules table, the evaluator with its hysteresis, the machine signals (GPU worst-of, engine sums)',
    mutate: ['src/metrics/bottleneck/judge.ts', 'src/metrics/bottleneck/rules.ts', 'src/metrics/bottleneck/machine.ts'],
    tests: ['test/unit/metrics/bottleneck.test.ts', 'test/unit/metrics/bottleneck-machine.test.ts', 'test/unit/metrics/bottleneck-signals.test.ts'],
  },
  {
    name: 'api-events',
    what: 'the Messages and Responses API rows: token events (visible or not), usage fields, error events',
    mutate: ['src/lib/api-events.ts'],
    tests: ['test/unit/proxy/event-scan-typed.test.ts', 'test/unit/sim/messages-responses.test.ts', 'test/unit/lib/api-events.test.ts', 'test/unit/proxy/typed-meter.test.ts'],
  },
];

export function moduleNamed(name) {
  const m = MODULES.find((x) => x.name === name);
  if (!m) throw new Error(`no mutation module "${name}"; known: ${MODULES.map((x) => x.name).join(', ')}`);
  return m;
}

/** tests/x.test.ts -> dist/tests/x.test.js, what node --test runs after the build. */
export const compiled = (ts) => 'dist/' + ts.replace(/\.ts$/, '.js');
