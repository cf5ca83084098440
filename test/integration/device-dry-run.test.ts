/**
 * scripts/device/run.sh --dry-run: the one command meant for a GPU node runs every step
 * against the fake nvidia-smi on 2 CPUs, so that it cannot rot between the rare times a
 * GPU machine is at hand. What it captures must parse with the project's own parsers (dmon,
 * --query-gpu, Prometheus text), its fixtures must carry SOURCES rows that call them
 * synthetic, the collector's /metrics must hold GPU series, and the scaling table must have
 * a row per worker count. The 2-CPU figures themselves are not judged, so the file runs in the
 * suite's shared pass (the bench's load here is light: 8 streams).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { parseGpuFacts } from '../../src/collectors/gpu/query.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts/device/run.sh');
const SAMPLES = 6;
const WORKERS = [1, 2];

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync('bash', [SCRIPT, ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 280_000 });
}

test('device run --dry-run: every step runs against the fake nvidia-smi; captures parse; the scaling table is written', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-device-'));
  try {
    // Short on purpose: the steps and files are under test here, not the figures. Two worker
    // counts (the node's default is 1,2,4,8) run the per-count loop; each more costs ~15 s here.
    const r = run(['--dry-run', dir], { DEVICE_DMON_SAMPLES: String(SAMPLES), DEVICE_COLLECT_SECONDS: '3', DEVICE_CPUS: '', DEVICE_WORKERS: WORKERS.join(','), BENCH_KNEE_STREAMS: '8', BENCH_CAPACITY_LOADS: '8x5', BENCH_CAPACITY_API_LOADS: '8x5' });
    const steps = readFileSync(join(dir, 'steps.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t'));
    assert.equal(r.status, 0, `run.sh exited ${r.status}:\n${r.stderr}\n${steps.map((s) => s.join(' ')).join('\n')}`);
    assert.deepEqual(steps.map((s) => [s[0], s[1]]), ['build', 'environment', 'captures', 'collector', 'bench', 'report'].map((n) => [n, 'ok']));

    const env = JSON.parse(readFileSync(join(dir, 'environment.json'), 'utf8'));
    assert.equal(env.gpu.available, true);
    assert.deepEqual([env.gpu.count, env.gpu.models, env.gpu.cudaVersion], [2, ['NVIDIA H200'], '12.4']);
    assert.ok(env.host.cpus >= 1 && env.host.memoryBytes > 0 && typeof env.infermeterVersion === 'string');

    const fixtures = readdirSync(join(dir, 'fixtures')).filter((f) => f !== 'SOURCES-rows.md').sort();
    const dmon = fixtures.filter((f) => f.startsWith('nvidia-smi-dmon-') && !f.startsWith('nvidia-smi-dmon-help'));
    assert.deepEqual(dmon, [
      'nvidia-smi-dmon-gpm-metrics-all-listed-o-DT-2gpu-fake-h200-r550.txt',
      'nvidia-smi-dmon-s-pucvmet-gpm-metrics-all-listed-o-DT-2gpu-fake-h200-r550.txt',
      'nvidia-smi-dmon-s-pucvmet-o-DT-2gpu-fake-h200-r550.txt',
    ]);
    for (const f of dmon) {
      const p = parseDmonText(readFileSync(join(dir, 'fixtures', f), 'utf8'));
      assert.equal(p.samples.length, SAMPLES * 2, `${f}: ${SAMPLES} samples of 2 GPUs`);
      assert.deepEqual([p.invalidLines, p.unknownColumns], [0, []], `${f}: ${p.invalidReasons.join('; ')}`);
      const gpm = p.samples.filter((s) => typeof s.values.get('infermeter_gpu_sm_occupancy_ratio') === 'number').length;
      // GPM needs two samples: the first round prints "-".
      if (f.includes('gpm-metrics')) assert.equal(gpm, (SAMPLES - 1) * 2, `${f}: SM occupancy from the second sample on`);
      else assert.equal(gpm, 0, f);
      if (f.includes('-s-pucvmet')) {
        for (const metric of ['infermeter_gpu_power_watts', 'infermeter_gpu_sm_utilization_ratio', 'infermeter_gpu_sm_clock_hertz', 'infermeter_gpu_power_violation_ratio', 'infermeter_gpu_memory_used_bytes', 'infermeter_gpu_pcie_replay_errors', 'infermeter_gpu_pcie_receive_bytes_per_second']) {
          assert.ok(p.samples.every((s) => s.values.has(metric)), `${f}: every group's columns (${metric})`);
        }
      }
    }
    for (const f of fixtures.filter((x) => x.startsWith('nvidia-smi-query-gpu-facts-'))) {
      const q = parseGpuFacts(readFileSync(join(dir, 'fixtures', f), 'utf8'));
      assert.deepEqual([q.error, q.facts.map((x) => x.name)], [null, ['NVIDIA H200', 'NVIDIA H200']], f);
    }
    const xml = readFileSync(join(dir, 'fixtures', 'nvidia-smi-q-x-2gpu-fake-h200-r550.xml'), 'utf8');
    assert.match(xml, /<attached_gpus>2<\/attached_gpus>/);
    assert.match(xml, /<cuda_version>12\.4<\/cuda_version>/);
    const help = fixtures.find((f) => f.startsWith('nvidia-smi-dmon-help-'));
    assert.ok(help && readFileSync(join(dir, 'fixtures', help), 'utf8').includes('--gpm-metrics'));

    // One SOURCES row per fixture, each saying it is synthetic.
    const rows = readFileSync(join(dir, 'fixtures', 'SOURCES-rows.md'), 'utf8').trim().split('\n');
    assert.deepEqual(rows.map((l) => /^\| `([^`]+)` \|/.exec(l)?.[1]).sort(), fixtures);
    assert.ok(rows.every((l) => l.includes('**Synthetic') && l.includes('`nvidia-smi ')), rows.join('\n'));

    // The GPU collector against the (fake) nvidia-smi: up, with GPM series.
    const scrape = parsePrometheusText(readFileSync(join(dir, 'collector', 'metrics.prom'), 'utf8'));
    const one = (name: string, labels: Record<string, string> = {}) => scrape.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    assert.deepEqual(one('infermeter_collector_up', { collector: 'gpu' }).map((s) => s.value), [1]);
    assert.deepEqual(one('infermeter_gpu_sm_occupancy_ratio').map((s) => s.labels['gpu']).sort(), ['0', '1']);
    assert.match(readFileSync(join(dir, 'collector', 'gpu-load.txt'), 'utf8'), /^fake: FAKE_NVIDIA_SMI_LOAD=/);

    // The scaling table: one row per worker count (and the bare proxy), CPU per chunk measured.
    const scaling = JSON.parse(readFileSync(join(dir, 'scaling.json'), 'utf8'));
    assert.deepEqual(scaling.settings.workers, WORKERS);
    // The dry run drives the client from 2 threads and serves from 2 upstream processes, as a node does from more.
    assert.deepEqual([scaling.settings.clientThreads, scaling.settings.upstreamProcs], [2, 2]);
    const paths = scaling.rows.map((x: { path: string }) => x.path);
    for (const w of WORKERS) assert.ok(paths.includes(`infermeter --workers ${w}`), paths.join(', '));
    assert.ok(paths.includes('node http+undici'));
    for (const row of scaling.rows) {
      assert.ok(row.knee !== null, `${row.path}: a knee (or 0: past it at the first step)`);
      assert.ok(Number.isFinite(row.loads['8 × 5 ms'].cpuUsPerChunk) && row.loads['8 × 5 ms'].cpuUsPerChunk > 0, `${row.path}: CPU per chunk`);
    }
    const table = readFileSync(join(dir, 'scaling.md'), 'utf8');
    for (const w of WORKERS) assert.match(table, new RegExp(`^\\| infermeter --workers ${w} \\| `, 'm'));
    assert.match(readFileSync(join(dir, 'summary.md'), 'utf8'), /DRY RUN: fake nvidia-smi, figures not from a GPU node/);

    // A folder that already holds a run is refused, naming it.
    const again = run(['--dry-run', dir]);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /already holds a run/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('device run: an unknown option and a missing folder are refused, naming the problem', () => {
  const bad = run(['--bogus']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown option --bogus/);
  const none = run([], { OUT: '' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /no output folder: set OUT or give one as the argument/);
});
