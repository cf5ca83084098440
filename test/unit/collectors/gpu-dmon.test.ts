import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DmonParser, parseDmonText } from '../../../src/collectors/gpu/dmon.js';
import { MIB } from '../../../src/collectors/gpu/columns.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

const M = {
  power: 'infermeter_gpu_power_watts',
  temp: 'infermeter_gpu_temperature_celsius',
  mtemp: 'infermeter_gpu_memory_temperature_celsius',
  sm: 'infermeter_gpu_sm_utilization_ratio',
  mem: 'infermeter_gpu_memory_utilization_ratio',
  jpg: 'infermeter_gpu_jpeg_utilization_ratio',
  mclk: 'infermeter_gpu_memory_clock_hertz',
  pclk: 'infermeter_gpu_sm_clock_hertz',
  fb: 'infermeter_gpu_memory_used_bytes',
  bar1: 'infermeter_gpu_bar1_used_bytes',
  ccpm: 'infermeter_gpu_protected_memory_used_bytes',
  pviol: 'infermeter_gpu_power_violation_ratio',
  tviol: 'infermeter_gpu_thermal_violation',
  sbecc: 'infermeter_gpu_ecc_single_bit_errors',
  dbecc: 'infermeter_gpu_ecc_double_bit_errors',
  pci: 'infermeter_gpu_pcie_replay_errors',
  rx: 'infermeter_gpu_pcie_receive_bytes_per_second',
  tx: 'infermeter_gpu_pcie_transmit_bytes_per_second',
  gract: 'infermeter_gpu_graphics_active_ratio',
  smActive: 'infermeter_gpu_sm_active_ratio',
  smOcc: 'infermeter_gpu_sm_occupancy_ratio',
  tensor: 'infermeter_gpu_tensor_active_ratio',
  dram: 'infermeter_gpu_dram_bandwidth_utilization_ratio',
  fp16: 'infermeter_gpu_fp16_active_ratio',
  nvlRx: 'infermeter_gpu_nvlink_receive_bytes_per_second',
};

interface Case {
  file: string;
  samples: number;
  headers: number;
  invalid: number;
  metrics: number;
  /** index of the sample checked, and the values expected in it (null: no value). */
  at: number;
  expect: Record<string, number | null>;
}

const CASES: Case[] = [
  { file: 'nvidia-smi-dmon-default-1gpu-rtx2080.txt', samples: 2, headers: 1, invalid: 0, metrics: 11, at: 0,
    expect: { [M.power]: 15, [M.temp]: 44, [M.mtemp]: null, [M.sm]: 0.12, [M.mem]: 0.09, [M.jpg]: 0, [M.mclk]: 405e6, [M.pclk]: 375e6 } },
  { file: 'nvidia-smi-dmon-s-mutc-o-TD-1gpu-2024.txt', samples: 6, headers: 1, invalid: 0, metrics: 13, at: 3,
    expect: { [M.fb]: 478 * MIB, [M.bar1]: 6 * MIB, [M.ccpm]: 0, [M.sm]: 0.13, [M.rx]: 44e6, [M.tx]: 30e6, [M.mclk]: 6250e6, [M.pclk]: 1695e6 } },
  { file: 'nvidia-smi-dmon-s-pucet-o-DT-1gpu-2021.txt', samples: 3, headers: 1, invalid: 0, metrics: 14, at: 0,
    expect: { [M.power]: 37, [M.temp]: 19, [M.mtemp]: null, [M.sbecc]: null, [M.dbecc]: null, [M.pci]: 0, [M.rx]: 0, [M.tx]: 1e6, [M.pclk]: 582e6 } },
  { file: 'nvidia-smi-dmon-s-pucm-1gpu-hotloop.txt', samples: 6, headers: 1, invalid: 0, metrics: 14, at: 1,
    expect: { [M.power]: 411, [M.temp]: 45, [M.sm]: 0.95, [M.mclk]: 12481e6, [M.pclk]: 2370e6, [M.fb]: 725 * MIB, [M.bar1]: 725 * MIB, [M.ccpm]: 0 } },
  { file: 'nvidia-smi-dmon-s-pucv-jpg-ofa-testfixture.txt', samples: 2, headers: 1, invalid: 0, metrics: 13, at: 1,
    expect: { [M.power]: 3, [M.sm]: 0.18, [M.pviol]: 0.99, [M.tviol]: 0 } },
  // GPM columns read "-" until two samples exist.
  { file: 'nvidia-smi-dmon-gpm-metrics-1-2-13-1gpu.txt', samples: 4, headers: 1, invalid: 0, metrics: 14, at: 0,
    expect: { [M.power]: 12, [M.sm]: 0, [M.mclk]: 7001e6, [M.gract]: null, [M.smActive]: null, [M.fp16]: null } },
  { file: 'nvidia-smi-dmon-gpm-metrics-1-2-13-1gpu.txt', samples: 4, headers: 1, invalid: 0, metrics: 14, at: 2,
    expect: { [M.power]: 11, [M.sm]: 0.02, [M.mem]: 0.07, [M.gract]: 0.01, [M.smActive]: 0.01, [M.fp16]: 0 } },
  { file: 'nvidia-smi-dmon-gpm-metrics-1-2-13-1gpu.txt', samples: 4, headers: 1, invalid: 0, metrics: 14, at: 3,
    expect: { [M.power]: 9, [M.sm]: 0.01, [M.pclk]: 502e6, [M.gract]: 0.09, [M.smActive]: 0.08, [M.fp16]: 0 } },
  { file: 'nvidia-smi-dmon-s-pucvmet-1gpu-older-driver.txt', samples: 5, headers: 1, invalid: 0, metrics: 18, at: 4,
    expect: { [M.power]: 19, [M.temp]: 45, [M.sm]: 0.09, [M.mem]: 0.1, [M.pviol]: 0, [M.tviol]: 0, [M.fb]: 821 * MIB, [M.bar1]: 6 * MIB, [M.sbecc]: null, [M.pci]: 0, [M.rx]: 0, [M.tx]: 0 } },
];

for (const c of CASES) {
  test(`dmon fixture ${c.file} (sample ${c.at})`, () => {
    const parsed = parseDmonText(fixture(c.file));
    assert.equal(parsed.samples.length, c.samples);
    assert.equal(parsed.headers, c.headers);
    assert.equal(parsed.invalidLines, c.invalid, parsed.invalidReasons.join('; '));
    assert.deepEqual(parsed.unknownColumns, []);
    const s = parsed.samples[c.at]!;
    assert.equal(s.gpu, 0);
    assert.equal(s.values.size, c.metrics, [...s.values.keys()].join(','));
    for (const [metric, want] of Object.entries(c.expect)) {
      const got = s.values.get(metric);
      if (want === null) assert.equal(got, null, metric);
      else assert.ok(got !== undefined && got !== null && Math.abs(got - want) < 1e-9 * Math.max(1, want), `${metric}: ${got} != ${want}`);
    }
    for (const [metric, v] of s.values) {
      if (v !== null && metric.endsWith('_ratio')) assert.ok(v >= 0 && v <= 1, `${metric} ${v} is a ratio`);
    }
  });
}

test('pmon output (per process) is not mistaken for dmon', () => {
  const parsed = parseDmonText(fixture('nvidia-smi-pmon-s-um-4gpu-r595.txt'));
  assert.equal(parsed.samples.length, 0);
  assert.ok(parsed.invalidLines >= 6);
  assert.match(parsed.invalidReasons[0]!, /pmon/);
});

test('header and units printed again mid-stream, blank lines, CRLF', () => {
  const text = fixture('nvidia-smi-dmon-default-1gpu-rtx2080.txt');
  const twice = (text + '\n' + text).replace(/\n/g, '\r\n');
  const parsed = parseDmonText(twice);
  assert.equal(parsed.samples.length, 4);
  assert.equal(parsed.headers, 2);
  assert.equal(parsed.invalidLines, 0);
});

test('a new header with another column set is followed from then on', () => {
  const a = fixture('nvidia-smi-dmon-default-1gpu-rtx2080.txt');
  const b = fixture('nvidia-smi-dmon-s-mutc-o-TD-1gpu-2024.txt');
  const parsed = parseDmonText(a + b);
  assert.equal(parsed.samples.length, 8);
  assert.ok(parsed.samples[0]!.values.has(M.power));
  assert.ok(!parsed.samples[7]!.values.has(M.power));
  assert.equal(parsed.samples[7]!.values.get(M.fb), 7 * MIB);
});

test('"-", "N/A" and "[N/A]" are no value; garbage lines are skipped and counted', () => {
  const text = [
    '# gpu    pwr  gtemp  mtemp     sm',
    '# Idx      W      C      C      %',
    '    0    N/A     40  [N/A]      -',
    'Failed to process sample',
    '    1     70     41     50     12     99',
    '    x     70     41     50     12',
    '    1    abc     41     50     12',
    '# something else entirely',
    '    1     70     41     50     12',
  ].join('\n');
  const parsed = parseDmonText(text);
  assert.equal(parsed.samples.length, 2);
  assert.equal(parsed.invalidLines, 5);
  const first = parsed.samples[0]!;
  assert.equal(first.values.get(M.power), null);
  assert.equal(first.values.get(M.mtemp), null);
  assert.equal(first.values.get(M.sm), null);
  assert.equal(first.values.get(M.temp), 40);
  assert.equal(parsed.samples[1]!.gpu, 1);
  assert.equal(parsed.samples[1]!.values.get(M.sm), 0.12);
});

test('older drivers: temp feeds the same metric as gtemp', () => {
  const parsed = parseDmonText('# gpu   pwr  temp    sm\n# Idx     W     C     %\n    0    60    55     7\n');
  assert.equal(parsed.samples[0]!.values.get(M.temp), 55);
});

test('unknown columns (or a known column under an unknown unit) are skipped, warned once', () => {
  const warned: string[] = [];
  const p = new DmonParser((c) => warned.push(c));
  const lines = ['# gpu    pwr  nvlrx     fb', '# Idx      W   MB/s    GiB', '    0    100     12      3', '    0    101     13      3',
    '# gpu    pwr  nvlrx     fb', '# Idx      W   MB/s    GiB', '    0    102     14      3'];
  const samples = lines.map((l) => p.line(l)).filter((e) => e.kind === 'sample');
  assert.equal(samples.length, 3);
  assert.deepEqual(warned, ['nvlrx [MB/s]', 'fb [GiB]']);
  const ev = samples[2]!;
  assert.ok(ev.kind === 'sample');
  assert.deepEqual([...ev.sample.values.keys()], [M.power]);
});

test('without a units line, columns are matched by name', () => {
  const parsed = parseDmonText('# gpu    pwr     sm\n    0    100     50\n');
  assert.equal(parsed.samples[0]!.values.get(M.sm), 0.5);
});

test('a sample before any header is invalid, not guessed', () => {
  const parsed = parseDmonText('    0    100     50\n');
  assert.equal(parsed.samples.length, 0);
  assert.equal(parsed.invalidLines, 1);
});

test('GPM columns: SM occupancy, tensor activity and DRAM bandwidth as ratios, NVLink as bytes/s; "-" is no value', () => {
  const text = [
    '# gpu    pwr     sm     smutil      smocc     mmaact       dram      nvlrx      pcirx',
    '# Idx      W      %      GPM:%      GPM:%      GPM:%      GPM:%   GPM:MB/s   GPM:MB/s',
    '    0    400     90          -          -          -          -          -          -',
    '    0    410     91         71         38         22         84       9000         50',
    '    1    405     88         70          -         21         80          -         40',
  ].join('\n');
  const parsed = parseDmonText(text);
  assert.equal(parsed.invalidLines, 0);
  assert.deepEqual(parsed.unknownColumns, []);
  const [first, second, third] = parsed.samples;
  for (const m of [M.smActive, M.smOcc, M.tensor, M.dram, M.nvlRx]) assert.equal(first!.values.get(m), null, m);
  assert.equal(second!.values.get(M.smOcc), 0.38);
  assert.equal(second!.values.get(M.tensor), 0.22);
  assert.equal(second!.values.get(M.dram), 0.84);
  assert.equal(second!.values.get(M.nvlRx), 9000 * MIB);
  assert.equal(second!.values.get(M.rx), 50 * MIB, 'GPM pcirx feeds the PCIe receive gauge');
  assert.equal(third!.values.get(M.smOcc), null);
  assert.equal(third!.values.get(M.nvlRx), null);
});

test('the 535 driver\'s 4-GPU warning is a warning, not garbage', () => {
  const text = 'WARNING: Only monitoring up to 4 GPUs is supported by default. Set NVSMI_SHOW_ALL_DEVICES=1 to increase the limit up to 16 GPUs.\n'
    + fixture('nvidia-smi-dmon-default-1gpu-rtx2080.txt');
  const parsed = parseDmonText(text);
  assert.equal(parsed.invalidLines, 0);
  assert.equal(parsed.samples.length, 2);
  assert.equal(parsed.warnings.length, 1);
  assert.match(parsed.warnings[0]!, /NVSMI_SHOW_ALL_DEVICES=1/);
});

// Events one line at a time, as the collector sees them (the parseDmonText summary above
// hides the reasons and the blank/units events).
test('DmonParser.line: blank, header, units and comment events, and columns before/after a header', () => {
  const p = new DmonParser();
  assert.equal(p.columns, null);
  assert.deepEqual(p.line('   '), { kind: 'blank' });
  assert.deepEqual(p.line('# Idx W'), { kind: 'invalid', reason: 'comment line that is neither a header nor a units line' });
  assert.deepEqual(p.line('# gpu    pwr     sm'), { kind: 'header', columns: ['gpu', 'pwr', 'sm'] });
  assert.deepEqual(p.columns, ['gpu', 'pwr', 'sm']);
  assert.deepEqual(p.line('# Idx      W'), { kind: 'invalid', reason: 'units line does not match the header' });
  assert.deepEqual(p.line('# Idx      W      %'), { kind: 'units' });
  const ev = p.line('    0    100     50');
  assert.ok(ev.kind === 'sample');
  assert.deepEqual([...ev.sample.values], [[M.power, 100], [M.sm, 0.5]]);
});

test('a units line that does not match the header is not used: the columns keep no unit', () => {
  // pwr under "GiB" would be an unknown column if the short units line were taken.
  const parsed = parseDmonText('# gpu    pwr     sm\n# Idx    GiB\n    0    100     50\n');
  assert.deepEqual(parsed.invalidReasons, ['units line does not match the header']);
  assert.deepEqual(parsed.unknownColumns, []);
  assert.equal(parsed.samples[0]!.values.get(M.power), 100);
});

test('a header under several "#" is still a header', () => {
  const parsed = parseDmonText('## gpu    pwr\n## Idx      W\n    0     70\n');
  assert.equal(parsed.headers, 1);
  assert.equal(parsed.invalidLines, 0);
  assert.equal(parsed.samples[0]!.values.get(M.power), 70);
});

test('invalid lines say why', () => {
  const parsed = parseDmonText([
    '    0    100',
    '# gpu    pwr',
    '    0    100     7',
    '   0x    100',
    '   x0    100',
    '    0    1e',
    '    0    Infinity',
  ].join('\n'));
  assert.deepEqual(parsed.invalidReasons, [
    'sample before any header',
    'expected 2 fields, got 3',
    'gpu index "0x" is not a number',
    'gpu index "x0" is not a number',
    'pwr value "1e" is not a number',
    'pwr value "Infinity" is not a number',
  ]);
  assert.equal(parsed.samples.length, 0);
});

test('GPU indexes of two digits (NVSMI_SHOW_ALL_DEVICES=1 shows up to 16 GPUs)', () => {
  const parsed = parseDmonText('# gpu    pwr\n# Idx      W\n   12     70\n');
  assert.equal(parsed.invalidLines, 0);
  assert.equal(parsed.samples[0]!.gpu, 12);
});

test('"n/a" is no value too', () => {
  const parsed = parseDmonText('# gpu    pwr  mtemp\n# Idx      W      C\n    0     70    n/a\n');
  assert.equal(parsed.invalidLines, 0);
  assert.equal(parsed.samples[0]!.values.get(M.mtemp), null);
});

test('only a line that starts with WARNING: is a driver warning', () => {
  const parsed = parseDmonText('Failed to read: WARNING: something\n');
  assert.deepEqual(parsed.warnings, []);
  assert.equal(parsed.invalidLines, 1);
});

test('docs/gpu.md: the GPM PCIe figure wins when both report; a GPM "-" leaves the -s t figure', () => {
  const parsed = parseDmonText([
    '# gpu  rxpci      pcirx',
    '# Idx   MB/s   GPM:MB/s',
    '    0     44          -',
    '    0     45         50',
  ].join('\n'));
  assert.equal(parsed.invalidLines, 0);
  assert.equal(parsed.samples[0]!.values.get(M.rx), 44e6);
  assert.equal(parsed.samples[1]!.values.get(M.rx), 50 * MIB);
});

test('parseDmonText lists unknown columns (without a units line, by name alone) and no warnings when there are none', () => {
  const parsed = parseDmonText('# gpu    pwr  frobs\n    0     70      3\n');
  assert.deepEqual(parsed.unknownColumns, ['frobs']);
  assert.deepEqual(parsed.warnings, []);
  assert.deepEqual([...parsed.samples[0]!.values.keys()], [M.power]);
});
