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
];

export function moduleNamed(name) {
  const m = MODULES.find((x) => x.name === name);
  if (!m) throw new Error(`no mutation module "${name}"; known: ${MODULES.map((x) => x.name).join(', ')}`);
  return m;
}

/** tests/x.test.ts -> dist/tests/x.test.js, what node --test runs after the build. */
export const compiled = (ts) => 'dist/' + ts.replace(/\.ts$/, '.js');
