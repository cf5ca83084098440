import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dmonColumns, dmonHeader, dmonRow, parsePrefix, queryCsv, type FakeColumn, type QueryGpu } from '../../../src/sim/gpu/format.js';
import { parseInvocation, readSettings, UsageError } from '../../../src/sim/gpu/args.js';
import { loadFromMetrics, readSimMetrics } from '../../../src/sim/gpu/load.js';
import { parseQueryCsv } from '../../../src/collectors/gpu/query.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

/** Re-prints a fixture's rows with the fake's formatter: current-driver layouts must come out byte for byte. */
function reprint(file: string, groups: string, prefix: string): void {
  const lines = fixture(file).split('\n').filter((l) => l.trim() !== '');
  const cols: FakeColumn[] = dmonColumns(groups);
  const p = parsePrefix(prefix);
  const [header, units] = dmonHeader(cols, p);
  assert.equal(header, lines[0]);
  assert.equal(units, lines[1]);
  for (const line of lines.slice(2)) {
    const t = line.trim().split(/\s+/);
    const stamps = (p.date ? 1 : 0) + (p.time ? 1 : 0);
    const values = t.slice(stamps + 1).map((v) => (v === '-' ? null : Number(v)));
    let now = new Date();
    if (stamps === 2) {
      const [d, tm] = [t[0]!, t[1]!];
      now = new Date(Number(d.slice(0, 4)), Number(d.slice(4, 6)) - 1, Number(d.slice(6, 8)), ...tm.split(':').map(Number) as [number, number, number]);
    }
    assert.equal(dmonRow(Number(t[stamps]), values, p, now), line);
  }
}

test('dmon layout: default columns (-s puc) byte for byte as captured', () => {
  reprint('nvidia-smi-dmon-default-1gpu-rtx2080.txt', 'puc', '');
});

test('dmon layout: -s mutc -o TD byte for byte as captured (Date before Time)', () => {
  reprint('nvidia-smi-dmon-s-mutc-o-TD-1gpu-2024.txt', 'mutc', 'TD');
});

test('dmon layout: pucm and pucv headers as captured', () => {
  const [h1, u1] = dmonHeader(dmonColumns('pucm'), parsePrefix(''));
  const hot = fixture('nvidia-smi-dmon-s-pucm-1gpu-hotloop.txt').split('\n');
  assert.equal(h1.trimEnd(), hot[0]);
  assert.equal(u1.trimEnd(), hot[1]);
  const [h2, u2] = dmonHeader(dmonColumns('pucv'), parsePrefix(''));
  const v = fixture('nvidia-smi-dmon-s-pucv-jpg-ofa-testfixture.txt').split('\n');
  assert.equal(h2, v[0]);
  assert.equal(u2, v[1]);
});

test('query CSV: header units as nvidia-smi prints them', () => {
  const g: QueryGpu = {
    index: 0, uuid: 'GPU-x', name: 'NVIDIA L4', driverVersion: '550.54.15', pciBusId: '00000000:00:03.0', memoryMiB: 23034, powerLimitW: 72,
    maxSmClockMHz: 2040, memClockMHz: 6251, count: 1, hbm: false, ecc: true,
    reading: { powerW: 20.5, tempC: 40, memTempC: null, smPct: 0, memPct: 0, memClockMHz: 6251, smClockMHz: 345, powerViolationPct: 0, thermalViolation: false, fbMiB: 21, bar1MiB: 1, rxMBps: 0, txMBps: 0,
      gpm: { graphicsPct: 0, smActivePct: 0, smOccupancyPct: 0, tensorPct: 0, dramPct: 0, fp16Pct: 0, pcieTxMiBps: 0, pcieRxMiBps: 0, nvlinkRxMiBps: 0, nvlinkTxMiBps: 0 } },
  };
  const fields = ['pstate', 'temperature.gpu', 'utilization.gpu', 'utilization.memory', 'memory.total', 'memory.free', 'memory.used'];
  const text = queryCsv(fields, [g], { header: true, units: true });
  const lms = fixture('nvidia-smi-query-gpu-lms-header-units.csv').split('\n')[0]!;
  assert.equal(text.split('\n')[0], lms.slice(lms.indexOf('pstate')));
  assert.equal(text.split('\n')[1], 'P8, 40, 0 %, 0 %, 23034 MiB, 23013 MiB, 21 MiB');
  const parsed = parseQueryCsv(text, fields);
  assert.equal(parsed.rows.length, 1);
  assert.equal(queryCsv(['temperature.memory'], [g], { header: false, units: false }), '[N/A]\n');
});

test('fake arguments: dmon flags, query forms, errors exit like nvidia-smi', () => {
  assert.deepEqual(parseInvocation(['dmon', '-s', 'pucvmet', '-o', 'T', '-d', '2', '-c', '3', '-i', '0,2']),
    { kind: 'dmon', groups: 'pucvmet', prefix: 'T', delaySeconds: 2, count: 3, ids: [0, 2], gpm: null, gpmOptions: null });
  assert.deepEqual(parseInvocation(['dmon', '--gpm-metrics', '2,3,5,10', '--gpm-options', 'd', '-s', 'puc']),
    { kind: 'dmon', groups: 'puc', prefix: '', delaySeconds: 1, count: null, ids: null, gpm: [2, 3, 5, 10], gpmOptions: 'd' });
  assert.deepEqual(parseInvocation(['dmon', '-h']), { kind: 'dmon-help' });
  assert.throws(() => parseInvocation(['dmon', '--gpm-metrics', '2,999']), UsageError);
  assert.deepEqual(parseInvocation(['--query-gpu', 'index,uuid', '--format=csv,noheader']),
    { kind: 'query', fields: ['index', 'uuid'], format: { header: false, units: true }, ids: null });
  assert.throws(() => parseInvocation(['--query-gpu=bogus.field', '--format=csv']), (e: unknown) => e instanceof UsageError && e.onStdout);
  assert.throws(() => parseInvocation(['dmon', '-s', 'xyz']), UsageError);
  assert.throws(() => parseInvocation(['--format=json', '--query-gpu=index']), UsageError);
  assert.throws(() => readSettings({ FAKE_NVIDIA_SMI_FAULT: 'explode' }), UsageError);
  assert.equal(readSettings({ FAKE_NVIDIA_SMI_FAULT: 'hang' }).faultAfter, 0);
});

test('load from a vLLM /metrics text: running requests and KV cache fill', () => {
  const idle = loadFromMetrics('vllm:num_requests_running{model_name="m"} 0\nvllm:kv_cache_usage_perc{model_name="m"} 0.0\n');
  assert.deepEqual(idle, { busy: 0, kvCache: 0, decode: 0, prefill: 0 });
  const busy = loadFromMetrics('# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0",model_name="m"} 16.0\nvllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.75\n');
  assert.deepEqual(busy, { busy: 1, kvCache: 0.75, decode: 1, prefill: 0 });
  // prefill: prompt tokens per second between two readings, against 8000 tok/s saturating
  const before = readSimMetrics('vllm:prompt_tokens_total{model_name="m"} 1000\n');
  const later = loadFromMetrics('vllm:num_requests_running{model_name="m"} 4\nvllm:prompt_tokens_total{model_name="m"} 5000\n', { reading: before, seconds: 1 });
  assert.deepEqual(later, { busy: 0.35 + 0.65 * 0.25, kvCache: 0, decode: 0.25, prefill: 0.5 });
  const v0 = loadFromMetrics(fixture('vllm-v0-metrics-0.10-cpu-full.prom'));
  assert.ok(v0.busy >= 0 && v0.busy <= 1 && v0.kvCache >= 0 && v0.kvCache <= 1);
});
