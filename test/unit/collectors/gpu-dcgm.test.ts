import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { normalizeDcgm } from '../../../src/collectors/gpu/dcgm.js';
import { parseDmonText } from '../../../src/collectors/gpu/dmon.js';
import { MIB } from '../../../src/collectors/gpu/columns.js';
import { DCGM_ALIASES } from '../../../src/collectors/gpu/dcgm-aliases.js';
import { catalog } from '../../../src/metrics/catalog.js';
import { resolveGpuSource, isExecutableOnPath } from '../../../src/collectors/gpu/source.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

/** What nvidia-smi dmon (-s puc + m, e, GPM) prints for the same two GPUs at the same moment as the dcgm-exporter fixture. */
const EQUIVALENT_DMON = [
  '# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk     fb    pci      gract     smutil      smocc     mmaact       dram       fp64       fp32       fp16      pcitx      pcirx      nvlrx      nvltx',
  '# Idx      W      C      C      %      %      %      %    MHz    MHz     MB   errs      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%   GPM:MB/s   GPM:MB/s   GPM:MB/s   GPM:MB/s',
  '    0    402     41     48     87     52      0      0   2619   1980  61440      0         85         71         38         22         84          0          3          7         52         96       9200       9100',
  '    1    388     40     46     85     50      0      0   2619   1980  61300      0         83         69         36         21         82          0          3          6         48         90       9000       8900',
].join('\n');

test('a dcgm-exporter scrape normalises to the same names and values as the equivalent dmon sample', () => {
  const dcgm = normalizeDcgm(fixture('dcgm-exporter-scrape-synthetic-2gpu-h100.prom'));
  const dmon = parseDmonText(EQUIVALENT_DMON);
  assert.equal(dmon.invalidLines, 0);
  assert.deepEqual(dmon.unknownColumns, []);
  assert.deepEqual(dcgm.samples.map((s) => s.gpu), [0, 1]);
  for (const [i, d] of dmon.samples.entries()) {
    const got = dcgm.samples[i]!;
    assert.deepEqual([...got.values.keys()].sort(), [...d.values.keys()].sort(), `GPU ${i}: same metric names`);
    for (const [name, want] of d.values) {
      const v = got.values.get(name)!;
      assert.ok(Math.abs(v - want!) <= 1e-9 * Math.max(1, Math.abs(want!)), `GPU ${i} ${name}: dcgm ${v} vs dmon ${want}`);
    }
  }
  assert.equal(dcgm.profiling, true);
});

test('dcgm-exporter labels give the facts nvidia-smi --query-gpu gives; pod-attributed labels are dropped', () => {
  const { facts } = normalizeDcgm(fixture('dcgm-exporter-scrape-synthetic-2gpu-h100.prom'));
  assert.deepEqual(facts[0], {
    index: 0, uuid: 'GPU-5e2a9c41-7b3d-4f0e-9a61-2c8d0b7e13f4', name: 'NVIDIA H100 80GB HBM3', driverVersion: '550.127.05',
    pciBusId: '00000000:18:00.0', memoryTotalBytes: 81559 * MIB,
  });
  assert.equal(facts[1]!.memoryTotalBytes, 81559 * MIB, 'used + free + reserved, as nvidia-smi memory.total');
});

test('only the default counters (no DCGM_FI_PROF_*): base gauges, no GPM ones, profiling=false; MIG instances and series without a gpu label are skipped', () => {
  const text = fixture('dcgm-exporter-scrape-synthetic-2gpu-h100.prom').split('\n').filter((l) => !l.includes('DCGM_FI_PROF_')).join('\n')
    + 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-x",GPU_I_ID="3",GPU_I_PROFILE="1g.10gb"} 12\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-y"} 50\n';
  const s = normalizeDcgm(text);
  assert.equal(s.profiling, false);
  assert.equal(s.samples.length, 2);
  assert.equal(s.samples[0]!.values.get('infermeter_gpu_sm_utilization_ratio'), 0.87);
  assert.equal(s.samples[0]!.values.has('infermeter_gpu_sm_occupancy_ratio'), false);
  assert.equal(normalizeDcgm('# nothing\nup 1\n').samples.length, 0);
});

test('the alias table maps only to catalog gauges with gpu and uuid labels', () => {
  const defs = new Map(catalog().map((d) => [d.name, d]));
  for (const name of Object.keys(DCGM_ALIASES)) assert.deepEqual(defs.get(name)?.labels, ['gpu', 'uuid'], name);
});

test('--gpu-source auto: nvidia-smi when it is on PATH, else dcgm-exporter when a URL is set, else nvidia-smi', () => {
  const c = { gpuSource: 'auto' as const, nvidiaSmi: 'nvidia-smi', dcgmExporterUrl: 'http://127.0.0.1:9400/metrics' };
  assert.equal(resolveGpuSource(c, () => true), 'nvidia-smi');
  assert.equal(resolveGpuSource(c, () => false), 'dcgm-exporter');
  assert.equal(resolveGpuSource({ ...c, dcgmExporterUrl: '' }, () => false), 'nvidia-smi');
  assert.equal(resolveGpuSource({ ...c, gpuSource: 'nvidia-smi' }, () => false), 'nvidia-smi');
  assert.equal(resolveGpuSource({ ...c, gpuSource: 'dcgm-exporter' }, () => true), 'dcgm-exporter');
  assert.equal(isExecutableOnPath('sh', '/nonexistent:/bin:/usr/bin'), true);
  assert.equal(isExecutableOnPath('nvidia-smi-not-here', '/bin:/usr/bin'), false);
  assert.equal(isExecutableOnPath('/nonexistent/nvidia-smi'), false);
});
