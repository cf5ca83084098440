/**
 * The last step of scripts/device/run.sh: turns what the run left under its folder into
 * fixtures (with their SOURCES.md rows), checks every capture with the project's own
 * parsers (dmon, --query-gpu, Prometheus text), builds the scaling table from bench:proxy's
 * capacity rows and writes summary.md. Never throws on a missing piece: a step that did not
 * run shows as missing in the summary.
 *   node dist/scripts/device/report.js <run folder>
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { parseGpuFacts, parseQueryCsv } from '../../src/collectors/gpu/query.js';
import { GPM_METRIC_NAMES } from '../../src/collectors/gpu/columns.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { fixtureName, parseCommands, runTag, sourcesRow, type CaptureRecord, type RunFacts } from './fixtures.js';
import { scalingFrom, scalingMarkdown } from './scaling.js';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: report.js <run folder>\n');
  process.exit(2);
}
const at = (...p: string[]) => join(dir, ...p);
const text = (...p: string[]) => (existsSync(at(...p)) ? readFileSync(at(...p), 'utf8') : null);
const json = (...p: string[]): Record<string, unknown> | null => {
  const t = text(...p);
  try {
    return t === null ? null : (JSON.parse(t) as Record<string, unknown>);
  } catch {
    return null;
  }
};

const env = json('environment.json');
const gpu = (env?.['gpu'] ?? {}) as { count?: number; models?: string[]; driverVersion?: string | null; cudaVersion?: string | null };
const host = (env?.['host'] ?? {}) as { cpuModel?: string; cpus?: number };
const dryRun = existsSync(at('DRY_RUN'));
const qx = text('raw', 'q-x.out') ?? '';
const facts: RunFacts = {
  dryRun, date: String(env?.['date'] ?? new Date().toISOString()).slice(0, 10),
  gpuCount: gpu.count ?? 0, gpuModel: gpu.models?.[0] ?? 'unknown GPU',
  driverVersion: gpu.driverVersion ?? /<driver_version>([^<]+)</.exec(qx)?.[1] ?? 'unknown',
  cudaVersion: gpu.cudaVersion ?? /<cuda_version>([^<]+)</.exec(qx)?.[1] ?? null,
  cpuModel: host.cpuModel ?? 'unknown CPU', cpus: host.cpus ?? 0,
};

// Fixtures and their SOURCES rows.
const records = parseCommands(text('raw', 'commands.tsv') ?? '');
const allGpm = (/^GPM_IDS=(.*)$/m.exec(text('raw', 'plan.txt') ?? '')?.[1] ?? '').split(',').filter(Boolean).map(Number);
const tag = runTag(facts);
mkdirSync(at('fixtures'), { recursive: true });
const fixtures: { file: string; record: CaptureRecord }[] = [];
const rows: string[] = [];
for (const r of records) {
  const name = fixtureName(r, tag, allGpm);
  if (!name || !existsSync(at('raw', `${r.id}.out`))) continue;
  copyFileSync(at('raw', `${r.id}.out`), at('fixtures', name));
  fixtures.push({ file: name, record: r });
  rows.push(sourcesRow(name, r, facts, (text('raw', `${r.id}.err`) ?? '').split('\n')[0]!.trim()));
}
writeFileSync(at('fixtures', 'SOURCES-rows.md'), rows.join('\n') + (rows.length ? '\n' : ''));

// Every capture through the project's parsers.
const checks: Record<string, unknown>[] = fixtures.map(({ file, record }) => {
  const body = readFileSync(at('fixtures', file), 'utf8');
  const base = { file, id: record.id, rc: record.rc, seconds: record.seconds, bytes: body.length };
  if (record.id.startsWith('dmon-') && record.id !== 'dmon-help') {
    const p = parseDmonText(body);
    const gpmValues = p.samples.reduce((a, s) => a + [...GPM_METRIC_NAMES].filter((m) => typeof s.values.get(m) === 'number').length, 0);
    const headers = body.split('\n').filter((l) => /^#.*\bgpu\b/.test(l));
    return { ...base, parser: 'dmon', samples: p.samples.length, gpus: [...new Set(p.samples.map((s) => s.gpu))], headers: p.headers, columns: headers[0]?.replace(/^#/, '').trim().split(/\s+/) ?? [], invalidLines: p.invalidLines, invalidReasons: [...new Set(p.invalidReasons)].slice(0, 5), unknownColumns: p.unknownColumns, warnings: p.warnings, gpmValues };
  }
  if (record.id.startsWith('query-')) {
    const fields = (record.args.find((a) => a.startsWith('--query-gpu=')) ?? '').slice('--query-gpu='.length).split(',');
    const q = parseQueryCsv(body, fields);
    // The collector's own fields go through its own parser too.
    const facts = record.id.startsWith('query-facts') ? parseGpuFacts(body) : null;
    return { ...base, parser: 'query-gpu', fields, gpus: q.rows.length, error: q.error ?? facts?.error ?? null, invalidLines: q.invalidLines, facts: facts?.facts.length ?? null };
  }
  if (record.id === 'q-x') {
    const count = (body.match(/<gpu id=/g) ?? []).length;
    return { ...base, parser: 'xml', gpus: count, driverVersion: /<driver_version>([^<]+)</.exec(body)?.[1] ?? null, cudaVersion: /<cuda_version>([^<]+)</.exec(body)?.[1] ?? null, architecture: /<product_architecture>([^<]+)</.exec(body)?.[1] ?? null };
  }
  return base;
});

// The collector's /metrics.
const metrics = text('collector', 'metrics.prom');
const collector = metrics === null ? null : (() => {
  const p = parsePrometheusText(metrics);
  const gpuSeries = p.samples.filter((s) => s.name.startsWith('infermeter_gpu_'));
  const up = p.samples.find((s) => s.name === 'infermeter_collector_up' && s.labels['collector'] === 'gpu');
  return {
    invalidLines: p.invalidLines, gpuFamilies: [...new Set(gpuSeries.map((s) => s.name))].sort(), gpuSeries: gpuSeries.length,
    gpuCollectorUp: up?.value ?? null, gpus: [...new Set(gpuSeries.map((s) => s.labels['gpu']).filter(Boolean))].length,
    load: (text('collector', 'gpu-load.txt') ?? 'not recorded').trim(),
    // What the load did, as the collector saw it at the last scrape.
    smUtilization: Object.fromEntries(gpuSeries.filter((s) => s.name === 'infermeter_gpu_sm_utilization_ratio').map((s) => [s.labels['gpu'], s.value])),
  };
})();
writeFileSync(at('captures.json'), JSON.stringify({ dryRun, tag, captures: checks, collector }, null, 2) + '\n');

// The scaling table.
const bench = json('bench', 'proxy.json');
const scaling = bench ? scalingFrom((bench['rows'] ?? []) as Record<string, unknown>[]) : null;
if (scaling) {
  writeFileSync(at('scaling.json'), JSON.stringify({ ...scaling, settings: { workers: bench!['workers'], cpus: bench!['cpus'], clientThreads: bench!['clientThreads'], upstreamProcs: bench!['upstreamProcs'], partial: bench!['partial'] === true, seconds: bench!['seconds'], rounds: bench!['rounds'], nginx: bench!['nginx'] } }, null, 2) + '\n');
  writeFileSync(at('scaling.md'), scalingMarkdown(scaling));
}

// summary.md: what ran, what each step gave.
const steps = (text('steps.tsv') ?? '').split('\n').filter(Boolean).map((l) => l.split('\t'));
const lines = [
  `# Device run ${dryRun ? '(DRY RUN: fake nvidia-smi, figures not from a GPU node)' : ''}`.trim(),
  '',
  `${facts.gpuCount}× ${facts.gpuModel}, driver ${facts.driverVersion}, CUDA ${facts.cudaVersion ?? 'unknown'}; ${facts.cpus} CPUs (${facts.cpuModel}); ${env?.['date'] ?? 'no environment record'}.`,
  '',
  '## Steps',
  '',
  '| step | status | seconds | note |',
  '| --- | --- | --- | --- |',
  ...steps.map(([name, status, secs, note]) => `| ${name} | ${status} | ${secs} | ${(note ?? '').replace(/\|/g, '\\|')} |`),
  '',
  '## Captures (parsed with the project\'s parsers)',
  '',
  '| file | exit | parser | samples / GPUs | unknown columns | invalid lines | GPM values |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...checks.map((c) => `| ${c['file']} | ${c['rc']} | ${c['parser'] ?? '-'} | ${c['samples'] ?? '-'} / ${Array.isArray(c['gpus']) ? c['gpus'].length : (c['gpus'] ?? '-')} | ${Array.isArray(c['unknownColumns']) ? c['unknownColumns'].join(', ') || 'none' : '-'} | ${c['invalidLines'] ?? '-'} | ${c['gpmValues'] ?? '-'} |`),
  '',
  '## GPU collector /metrics',
  '',
  collector ? `GPU load: ${collector.load}; SM utilization at the last scrape: ${Object.entries(collector.smUtilization).map(([g, v]) => `GPU ${g} ${v}`).join(', ') || 'none'}. gpu collector up: ${collector.gpuCollectorUp}; ${collector.gpuSeries} infermeter_gpu_* samples over ${collector.gpus} GPUs; families: ${collector.gpuFamilies.join(', ')}.` : 'not captured',
  '',
  '## Scaling (bench:proxy capacity section)',
  '',
  bench?.['partial'] === true ? '**Partial: the bench was cut short; the knees of paths still stepping are missing.**\n' : '',
  scaling ? scalingMarkdown(scaling) : 'not run (see steps)',
];
writeFileSync(at('summary.md'), lines.join('\n') + '\n');
process.stdout.write(`${fixtures.length} fixtures, ${checks.filter((c) => c['parser'] === 'dmon').length} dmon captures parsed; scaling table ${scaling ? 'written' : 'missing'}; ${at('summary.md')}\n`);
