/**
 * The Grafana dashboards (overview, GPU, engine), generated from the SLO config so that
 * objectives and windows match the alert rules. Every query reads only catalog metrics
 * (names.ts); test/unit/dashboards-*.test.ts checks names and PromQL syntax, and the
 * end-to-end test evaluates every query against a real Prometheus.
 */
import type { SloConfig } from '../slo/config.js';
import { dashboardJson, datasourceVariable, guardedRatio, labelVariable, tracingDatasourceVariable, type DashboardSpec, type PanelSpec } from './dashboards-kit.js';
import { M } from '../slo/names.js';
import { errorBudget } from '../slo/config.js';
import { classicMean, classicQuantile, latencyMean, latencyQuantile } from '../slo/quantile.js';
import { breakdownRow } from './dashboards-breakdown.js';
import { headroomRow } from './dashboards-headroom.js';
import { energyRow } from './dashboards-energy.js';
import { prefixRow } from './dashboards-prefix.js';

const RI = '$__rate_interval';
const INSTANCE = 'instance=~"$instance"';
const REQ = `${INSTANCE}, gen_ai_request_model=~"$model"`;

/** `sum by (labels) (rate(metric{sel}[window]))`. */
function sumRate(metric: string, by: string, sel: string, window = RI): string {
  return `sum by (${by}) (rate(${metric}{${sel}}[${window}]))`;
}


/** Native histogram where Prometheus has it, classic buckets otherwise (quantile.ts). */
function quantile(q: number, histogram: string, by: string, sel: string): string {
  return latencyQuantile(q, histogram, by, sel, RI);
}

function latencyPanel(title: string, histogram: string, slo: string, description: string, w = 8): PanelSpec {
  return {
    title,
    description,
    unit: 's',
    w,
    targets: [
      ...[0.5, 0.95, 0.99].map((q) => ({
        expr: quantile(q, histogram, 'gen_ai_request_model', REQ),
        legend: `P${Math.round(q * 100)} {{gen_ai_request_model}}`,
        exemplar: q === 0.99,
      })),
      ...(slo ? [{ expr: `max by (gen_ai_request_model) (${M.sloThreshold}{${INSTANCE}, slo="${slo}"})`, legend: 'threshold {{gen_ai_request_model}}' }] : []),
    ],
  };
}

/**
 * One API's streams against another's (the `api` label of the latency histograms): Messages and
 * Responses are `chat` operations, so only this label keeps a Claude-Code-style client's TTFT
 * apart from a chat client's. The selected models together.
 */
function perApiP99(): PanelSpec {
  const line = (name: string, histogram: string) => ({ expr: quantile(0.99, histogram, 'api', REQ), legend: `${name} P99 {{api}}` });
  return { title: 'P99 by API: TTFT, TPOT, E2E', unit: 's', w: 24, h: 7,
    description: 'The 99th percentiles per generation API (api: chat_completions, completions, messages for Anthropic Messages, responses for OpenAI Responses), every selected model together. One API far above the others points at what its clients send (longer prompts, tools, reasoning), not at the engine as a whole.',
    targets: [line('TTFT', M.ttft), line('TPOT', M.tpot), line('E2E', M.e2e)] };
}

function sloErrorRatio(window: string): string {
  const by = 'gen_ai_request_model, slo';
  const inc = (sel: string) => `sum by (${by}) (increase(${M.sloRequests}{${sel}}[${window}]))`;
  return guardedRatio(inc(`${REQ}, result="bad"`), inc(REQ));
}

function variables() {
  return [
    datasourceVariable(),
    tracingDatasourceVariable(),
    labelVariable('instance', 'instance', M.inFlight, 'Instance'),
    labelVariable('model', 'gen_ai_request_model', `${M.requests}{${INSTANCE}}`, 'Model'),
  ];
}

/**
 * Where the time to first token went: the proxy's TTFT beside the engine's own, its queue and
 * prefill (P99, per instance), and the means, which add up: engine TTFT ≈ queue + prefill, and
 * proxy − engine is the residual (network, HTTP server, proxy).
 */
function ttftDecomposition(): PanelSpec[] {
  const by = 'instance';
  return [
    { title: 'TTFT P99: proxy, engine, engine queue, engine prefill', unit: 's', w: 24, h: 6,
      description: 'The proxy measures from when it received the request; the engine from when it did. Queue: waiting for a batch slot; prefill: first scheduling to first token. A proxy P99 far above the engine\'s points at the network or the proxy host; a queue near the engine TTFT at batch capacity.',
      targets: [
        { expr: quantile(0.99, M.ttft, by, INSTANCE), legend: 'proxy TTFT {{instance}}', exemplar: true },
        { expr: classicQuantile(0.99, M.engineTtft, by, INSTANCE, RI), legend: 'engine TTFT {{instance}}' },
        { expr: classicQuantile(0.99, M.engineQueue, by, INSTANCE, RI), legend: 'engine queue {{instance}}' },
        { expr: classicQuantile(0.99, M.enginePrefill, by, INSTANCE, RI), legend: 'engine prefill {{instance}}' },
      ] },
    { title: 'Mean TTFT decomposed: queue + prefill + residual', unit: 's', w: 24, h: 6,
      description: 'Means add up where quantiles do not: engine queue + engine prefill ≈ engine TTFT, and the residual = proxy TTFT − engine TTFT is the network, the HTTP server and the proxy.',
      targets: [
        { expr: classicMean(M.engineQueue, by, INSTANCE, RI), legend: 'queue {{instance}}' },
        { expr: classicMean(M.enginePrefill, by, INSTANCE, RI), legend: 'prefill {{instance}}' },
        { expr: `(\n${latencyMean(M.ttft, by, INSTANCE, RI)}\n)\n-\n(\n${classicMean(M.engineTtft, by, INSTANCE, RI)}\n)`, legend: 'residual (network, HTTP, proxy) {{instance}}' },
        { expr: latencyMean(M.ttft, by, INSTANCE, RI), legend: 'proxy TTFT {{instance}}' },
      ] },
  ];
}

function whyIsP99Slow(): PanelSpec[] {
  const common = { w: 24, h: 6 };
  return [
    { ...common, title: 'TTFT P99 by model', unit: 's', description: 'The symptom: time to first token, 99th percentile. Exemplar dots are recent requests\' trace ids (tracing on): click one for its trace in $tracing.',
      targets: [{ expr: quantile(0.99, M.ttft, 'gen_ai_request_model', REQ), legend: 'P99 {{gen_ai_request_model}}', exemplar: true }] },
    ...ttftDecomposition(),
    { ...common, title: 'KV-cache usage', unit: 'percentunit', min: 0, max: 1, thresholds: [[0.95, 'red']],
      description: 'Near 100% the engine cannot admit new sequences: requests wait and running ones get preempted.',
      targets: [{ expr: `max by (instance, engine) (${M.kvCache}{${INSTANCE}})`, legend: '{{instance}} {{engine}}' }] },
    { ...common, title: 'Waiting and running requests', unit: 'short', min: 0,
      description: 'A waiting queue that grows while TTFT rises means arrivals exceed batch capacity.',
      targets: [
        { expr: `sum by (instance) (${M.waiting}{${INSTANCE}})`, legend: 'waiting {{instance}}' },
        { expr: `sum by (instance) (${M.running}{${INSTANCE}})`, legend: 'running {{instance}}' },
      ] },
    { ...common, title: 'GPU utilisation', unit: 'percentunit', min: 0, max: 1,
      description: 'High TTFT with idle GPUs points away from compute: queueing in front of the engine, the network, or the proxy host.',
      targets: [{ expr: `avg by (instance, gpu) (${M.gpuUtil}{${INSTANCE}})`, legend: '{{instance}} GPU {{gpu}}' }] },
    { ...common, title: 'TPOT P99 by model', unit: 's', description: 'The decode-side symptom: time per output token, 99th percentile.',
      targets: [{ expr: quantile(0.99, M.tpot, 'le, gen_ai_request_model', REQ), legend: 'P99 {{gen_ai_request_model}}' }] },
    { ...common, title: 'DRAM bandwidth utilisation', unit: 'percentunit', min: 0, max: 1, thresholds: [[0.9, 'orange']],
      description: 'Decode is memory-bound: TPOT rising while DRAM bandwidth sits near its peak means the batch is as fast as the memory allows (GPM or DCGM profiling; empty where unavailable).',
      targets: [{ expr: `avg by (instance, gpu) (${M.gpuDram}{${INSTANCE}})`, legend: '{{instance}} GPU {{gpu}}' }] },
  ];
}

function overview(slos: SloConfig): DashboardSpec {
  const budget = errorBudget(slos);
  return {
    uid: 'infermeter-overview',
    title: 'infermeter / Overview',
    description: 'Latency, throughput, outcomes, SLOs and goodput per model, measured by the infermeter proxy.',
    variables: variables(),
    rows: [
      { title: 'Latency (ok streaming requests)', panels: [
        latencyPanel('Time to first token', M.ttft, 'ttft', 'TTFT: first chunk carrying a generated token minus request receipt.'),
        latencyPanel('Time per output token', M.tpot, 'tpot', 'TPOT: (E2E - TTFT) / (output tokens - 1).'),
        latencyPanel('End-to-end latency', M.e2e, 'e2e', 'E2E: last byte of the response minus request receipt.'),
        { title: 'Inter-chunk latency P99', unit: 's', w: 24, h: 6, description: 'Gap between consecutive token-bearing chunks, 99th percentile.',
          targets: [{ expr: quantile(0.99, M.chunk, 'gen_ai_request_model', REQ), legend: 'P99 {{gen_ai_request_model}}' }] },
        perApiP99(),
      ] },
      { title: 'Traffic', panels: [
        { title: 'Requests per second', unit: 'reqps', w: 6, description: 'Every forwarded request, by model.',
          targets: [{ expr: sumRate(M.requests, 'gen_ai_request_model', REQ), legend: '{{gen_ai_request_model}}' }] },
        { title: 'Tokens per second', unit: 'short', w: 6, description: 'Input and output tokens per second, partial streams included.',
          targets: [{ expr: sumRate(M.tokens, 'gen_ai_request_model, gen_ai_token_type', REQ), legend: '{{gen_ai_token_type}} {{gen_ai_request_model}}' }] },
        { title: 'In-flight requests', unit: 'short', w: 6, description: 'Requests being proxied right now.',
          targets: [{ expr: `sum by (instance) (${M.inFlight}{${INSTANCE}})`, legend: '{{instance}}' }] },
        { title: 'Outcomes', unit: 'reqps', w: 6, description: 'Requests per second by outcome (ok, upstream_error, stream_error, client_abort, upstream_timeout, upstream_unreachable, rejected).',
          targets: [{ expr: sumRate(M.requests, 'outcome', REQ), legend: '{{outcome}}' }] },
        { title: 'Requests per second by API (route)', unit: 'reqps', w: 24, description: 'The route split: chat_completions, completions, messages (Anthropic), responses (OpenAI Responses), and the non-generation routes.',
          targets: [{ expr: sumRate(M.requests, 'route', REQ), legend: '{{route}}' }] },
      ] },
      { title: 'SLOs and goodput', panels: [
        { title: 'SLO attainment (dashboard range)', type: 'stat', unit: 'percentunit', w: 6, baseColor: 'red', thresholds: [[slos.objective, 'green']],
          description: `Share of judged requests that met each threshold over the time range shown; the objective is ${slos.objective}.`,
          targets: [{ expr: `1 - (${sloErrorRatio('$__range')})`, legend: '{{gen_ai_request_model}} {{slo}}' }] },
        { title: `Error budget left (${slos.window})`, type: 'stat', unit: 'percentunit', w: 6, baseColor: 'red', thresholds: [[0, 'orange'], [0.25, 'green']],
          description: `1 - (bad share over ${slos.window}) / ${budget}: the error budget of the ${slos.objective} objective not yet spent.`,
          targets: [{ expr: `1 - (${sloErrorRatio(slos.window)}) / ${budget}`, legend: '{{gen_ai_request_model}} {{slo}}' }] },
        { title: 'SLO burn rate', unit: 'short', w: 12, thresholds: [[1, 'orange'], [14.4, 'red']],
          description: 'Error ratio divided by the error budget: 1 spends the budget exactly over the window; the page alert fires above 14.4 (1h and 5m).',
          targets: [{ expr: `(${guardedRatio(sumRate(M.sloRequests, 'gen_ai_request_model, slo', `${REQ}, result="bad"`), sumRate(M.sloRequests, 'gen_ai_request_model, slo', REQ))}) / ${budget}`, legend: '{{gen_ai_request_model}} {{slo}}' }] },
        { title: 'Goodput ratio', unit: 'percentunit', w: 12, min: 0, max: 1,
          description: 'Share of judged requests that met every SLO that applies to them.',
          targets: [{ expr: guardedRatio(sumRate(M.goodput, 'gen_ai_request_model', REQ), sumRate(M.judged, 'gen_ai_request_model', REQ)), legend: '{{gen_ai_request_model}}' }] },
        { title: 'Goodput (requests per second meeting every SLO)', unit: 'reqps', w: 12,
          description: 'Requests per second that met every SLO, beside all judged requests per second.',
          targets: [
            { expr: sumRate(M.goodput, 'gen_ai_request_model', REQ), legend: 'good {{gen_ai_request_model}}' },
            { expr: sumRate(M.judged, 'gen_ai_request_model', REQ), legend: 'judged {{gen_ai_request_model}}' },
          ] },
      ] },
      headroomRow(REQ),
      breakdownRow(REQ),
      energyRow(REQ, INSTANCE),
      prefixRow(REQ),
      { title: 'Why is P99 slow? (one time axis)', panels: whyIsP99Slow() },
    ],
  };
}

/** A GPU gauge aggregated per upstream through the join series; an instance without it gets one `upstream="all GPUs"` line. */
function perEngine(agg: 'avg' | 'sum', metric: string): string {
  const joined = `${agg} by (instance, upstream) (${metric}{${INSTANCE}} * on (instance, gpu, uuid) group_left (upstream) ${M.gpuEngine}{${INSTANCE}})`;
  return `${joined} or on (instance) label_replace(${agg} by (instance) (${metric}{${INSTANCE}}), "upstream", "all GPUs", "", "")`;
}

function gpu(): DashboardSpec {
  const per = (metric: string) => ({ expr: `${metric}{${INSTANCE}}`, legend: '{{instance}} GPU {{gpu}}' });
  return {
    uid: 'infermeter-gpu',
    title: 'infermeter / GPU',
    description: 'Per-GPU gauges from nvidia-smi dmon (with GPM where the GPU has it) or dcgm-exporter, collected by infermeter.',
    variables: variables(),
    rows: [
      { title: 'Load: what sm% says, and what the SMs really do', panels: [
        { title: 'SM utilisation (sm%) and SM active', unit: 'percentunit', min: 0, max: 1, w: 6,
          description: 'sm%: share of time any kernel ran, so one small kernel reads 100%. SM active (GPM): share of SMs with work, averaged over all SMs.',
          targets: [
            { expr: `${M.gpuUtil}{${INSTANCE}}`, legend: 'sm% {{instance}} GPU {{gpu}}' },
            { expr: `${M.gpuSmActive}{${INSTANCE}}`, legend: 'SM active {{instance}} GPU {{gpu}}' },
          ] },
        { title: 'SM occupancy', unit: 'percentunit', min: 0, max: 1, w: 6,
          description: 'Resident warps as a share of what the SMs can hold (GPM): low under load means kernels too small to fill the GPU; prefill raises it.',
          targets: [per(M.gpuSmOccupancy)] },
        { title: 'Tensor core activity', unit: 'percentunit', min: 0, max: 1, w: 6,
          description: 'Share of cycles the tensor (matrix-multiply) pipes were busy (GPM): the useful math of prefill and large decode batches.',
          targets: [per(M.gpuTensor)] },
        { title: 'DRAM bandwidth utilisation', unit: 'percentunit', min: 0, max: 1, w: 6, thresholds: [[0.9, 'orange']],
          description: 'Share of peak memory bandwidth used (GPM): decode is memory-bound, so near the top TPOT will not improve by batching more.',
          targets: [per(M.gpuDram)] },
        { title: 'Memory busy time (mem%)', unit: 'percentunit', min: 0, max: 1, description: 'Share of time device memory was read or written (dmon mem%; not the share of bandwidth: see DRAM bandwidth).', targets: [per(M.gpuMemUtil)] },
        { title: 'Memory used', unit: 'bytes', min: 0, description: 'Frame-buffer memory in use, and the total (the engine preallocates most of it for the KV cache).',
          targets: [
            { expr: `${M.gpuMemUsed}{${INSTANCE}}`, legend: 'used {{instance}} GPU {{gpu}}' },
            { expr: `${M.gpuMemTotal}{${INSTANCE}}`, legend: 'total {{instance}} GPU {{gpu}}' },
          ] },
        { title: 'PCIe throughput', unit: 'Bps', description: 'Host-to-device (rx) and device-to-host (tx) PCIe traffic.',
          targets: [
            { expr: `${M.gpuPcieRx}{${INSTANCE}}`, legend: 'rx {{instance}} GPU {{gpu}}' },
            { expr: `${M.gpuPcieTx}{${INSTANCE}}`, legend: 'tx {{instance}} GPU {{gpu}}' },
          ] },
        { title: 'NVLink throughput', unit: 'Bps', description: 'GPU-to-GPU traffic over all NVLinks (GPM): tensor-parallel all-reduces show here.',
          targets: [
            { expr: `${M.gpuNvlinkRx}{${INSTANCE}}`, legend: 'rx {{instance}} GPU {{gpu}}' },
            { expr: `${M.gpuNvlinkTx}{${INSTANCE}}`, legend: 'tx {{instance}} GPU {{gpu}}' },
          ] },
      ] },
      { title: 'Per engine (several engines on one node: infermeter_gpu_engine_info)', panels: [
        { title: 'GPU utilisation per engine', unit: 'percentunit', min: 0, max: 1,
          description: 'sm% averaged over the GPUs each upstream runs on (the join series ties GPUs to engines: gpus: or the engine\'s own processes). Where no GPU is tied to an engine (one upstream), one line over all GPUs.',
          targets: [{ expr: perEngine('avg', M.gpuUtil), legend: '{{instance}} {{upstream}}' }] },
        { title: 'GPU memory used per engine', unit: 'bytes', min: 0,
          description: 'Frame-buffer memory in use on each upstream\'s GPUs, summed, beside their total (one line over all GPUs where none is tied to an engine).',
          targets: [
            { expr: perEngine('sum', M.gpuMemUsed), legend: 'used {{instance}} {{upstream}}' },
            { expr: perEngine('sum', M.gpuMemTotal), legend: 'total {{instance}} {{upstream}}' },
          ] },
      ] },
      { title: 'Power, heat and clocks', panels: [
        { title: 'Power draw', unit: 'watt', min: 0, description: 'Board power draw.', targets: [per(M.gpuPower)] },
        { title: 'Temperature', unit: 'celsius', thresholds: [[85, 'red']], description: 'GPU core temperature; the alert fires above 85°C.', targets: [per(M.gpuTemp)] },
        { title: 'Clocks', unit: 'hertz', description: 'SM and memory clocks; an SM clock that drops under load means throttling.',
          targets: [
            { expr: `${M.gpuSmClock}{${INSTANCE}}`, legend: 'SM {{instance}} GPU {{gpu}}' },
            { expr: `${M.gpuMemClock}{${INSTANCE}}`, legend: 'memory {{instance}} GPU {{gpu}}' },
          ] },
        { title: 'Power and thermal violations', unit: 'percentunit', min: 0, max: 1, description: 'Share of time the GPU was held back by its power cap or its thermal limit (averaged over the rate interval).',
          targets: [
            { expr: `avg_over_time(${M.gpuPowerViolation}{${INSTANCE}}[${RI}])`, legend: 'power {{instance}} GPU {{gpu}}' },
            { expr: `avg_over_time(${M.gpuThermalViolation}{${INSTANCE}}[${RI}])`, legend: 'thermal {{instance}} GPU {{gpu}}' },
          ] },
      ] },
      { title: 'Collector', panels: [
        { title: 'GPU data age', unit: 's', h: 6, thresholds: [[60, 'red']], description: 'Seconds since the GPU collector (nvidia-smi or dcgm-exporter) last succeeded; the stale alert fires above 60 s.',
          targets: [{ expr: `time() - ${M.collectorLastSuccess}{${INSTANCE}, collector="gpu"}`, legend: '{{instance}}' }] },
        { title: 'GPU source and GPM', type: 'stat', unit: 'none', h: 6,
          description: 'Which source feeds these panels, and whether SM occupancy, DRAM bandwidth and tensor activity are available (gpm unavailable: the reason says why; those panels stay empty).',
          targets: [{ expr: `max by (instance, source, gpm, reason) (${M.gpuSourceInfo}{${INSTANCE}})`, legend: '{{instance}} {{source}} gpm {{gpm}} {{reason}}' }] },
      ] },
    ],
  };
}

function engine(): DashboardSpec {
  const inst = `{${INSTANCE}}`;
  return {
    uid: 'infermeter-engine',
    title: 'infermeter / Engine',
    description: 'Inference engine state scraped from its /metrics and normalized by infermeter (infermeter_engine_*).',
    variables: variables(),
    rows: [
      { title: 'Capacity', panels: [
        { title: 'KV-cache usage', unit: 'percentunit', min: 0, max: 1, thresholds: [[0.95, 'red']], description: 'Share of KV-cache blocks in use.',
          targets: [{ expr: `max by (instance, engine) (${M.kvCache}${inst})`, legend: '{{instance}} {{engine}}' }] },
        { title: 'Running and waiting requests', unit: 'short', min: 0, description: 'Sequences being batched, and requests queued for admission.',
          targets: [
            { expr: `sum by (instance, engine) (${M.running}${inst})`, legend: 'running {{instance}}' },
            { expr: `sum by (instance, engine) (${M.waiting}${inst})`, legend: 'waiting {{instance}}' },
          ] },
        { title: 'Prefix-cache hit ratio', unit: 'percentunit', min: 0, max: 1, description: 'Share of prefix-cache lookups (tokens) that hit.',
          targets: [{ expr: guardedRatio(sumRate(M.prefixHits, 'instance, engine', INSTANCE), sumRate(M.prefixQueries, 'instance, engine', INSTANCE)), legend: '{{instance}} {{engine}}' }] },
        { title: 'Preemptions per second', unit: 'short', min: 0, description: 'Sequences evicted from the KV cache to make room; each one costs recomputation.',
          targets: [{ expr: sumRate(M.preemptions, 'instance, engine', INSTANCE), legend: '{{instance}} {{engine}}' }] },
      ] },
      { title: 'Engine-side vs proxy-side TTFT', panels: [
        { title: 'TTFT P50 and P99: engine vs proxy', unit: 's', w: 24, h: 9,
          description: 'The engine measures from when it received the request; the proxy from when it did. The gap is network, proxy and HTTP queueing in front of the engine.',
          targets: [
            { expr: classicQuantile(0.99, M.engineTtft, 'instance', INSTANCE, RI), legend: 'engine P99 {{instance}}' },
            { expr: quantile(0.99, M.ttft, 'instance', REQ), legend: 'proxy P99 {{instance}}' },
            { expr: classicQuantile(0.5, M.engineTtft, 'instance', INSTANCE, RI), legend: 'engine P50 {{instance}}' },
            { expr: quantile(0.5, M.ttft, 'instance', REQ), legend: 'proxy P50 {{instance}}' },
          ] },
      ] },
      { title: 'Collector', panels: [
        { title: 'Engine collector up', unit: 'short', w: 24, h: 5, min: 0, max: 1, description: '1 when the last scrape of the engine /metrics succeeded.',
          targets: [{ expr: `${M.collectorUp}{${INSTANCE}, collector="engine"}`, legend: '{{instance}}' }] },
      ] },
    ],
  };
}

export function dashboards(slos: SloConfig): { file: string; json: Record<string, unknown> }[] {
  return [
    { file: 'infermeter-overview.json', json: dashboardJson(overview(slos)) },
    { file: 'infermeter-gpu.json', json: dashboardJson(gpu()) },
    { file: 'infermeter-engine.json', json: dashboardJson(engine()) },
  ];
}
