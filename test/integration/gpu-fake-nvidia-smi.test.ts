/** The fake nvidia-smi, run as a real process through bin/fake-nvidia-smi: its output reads like the captures. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { parseGpuFacts, parseQueryCsv } from '../../src/collectors/gpu/query.js';
import { MIB, QUERY_FIELDS } from '../../src/collectors/gpu/columns.js';
import { DMON_FIXTURES, fixturePath, runFake } from '../fakes/gpu.js';

const FAST = { FAKE_NVIDIA_SMI_PERIOD_MS: '5' };

for (const [groups, prefix, metrics] of [['puc', '', 11], ['pucvmet', 'T', 21], ['mutc', 'DT', 13], ['e', '', 3]] as const) {
  test(`dmon -s ${groups}${prefix ? ` -o ${prefix}` : ''}: parses with no invalid line and no unknown column`, async () => {
    const args = ['dmon', '-s', groups, '-c', '25', ...(prefix ? ['-o', prefix] : [])];
    const r = await runFake(args, { ...FAST, FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_HEADER_EVERY: '10' });
    assert.equal(r.code, 0, r.stderr);
    const parsed = parseDmonText(r.stdout);
    assert.equal(parsed.invalidLines, 0, parsed.invalidReasons.join('; '));
    assert.deepEqual(parsed.unknownColumns, []);
    assert.equal(parsed.samples.length, 50);
    assert.equal(parsed.headers, 3, 'header printed again every 10 rounds');
    assert.deepEqual([...new Set(parsed.samples.map((s) => s.gpu))], [0, 1]);
    assert.equal(parsed.samples[0]!.values.size, metrics);
  });
}

test('dmon -i selects GPUs', async () => {
  const r = await runFake(['dmon', '-c', '2', '-i', '1,3'], { ...FAST, FAKE_NVIDIA_SMI_GPUS: '4' });
  assert.deepEqual(parseDmonText(r.stdout).samples.map((s) => s.gpu), [1, 3, 1, 3]);
});

test('query: the collector\'s static facts, noheader,nounits and with header and units', async () => {
  const q = `--query-gpu=${QUERY_FIELDS.join(',')}`;
  const env = { FAKE_NVIDIA_SMI_GPUS: '8', FAKE_NVIDIA_SMI_MODEL: 'NVIDIA H100 80GB HBM3' };
  for (const format of ['--format=csv,noheader,nounits', '--format=csv']) {
    const r = await runFake([q, format], env);
    assert.equal(r.code, 0);
    const { facts, error } = parseGpuFacts(r.stdout);
    assert.equal(error, null);
    assert.equal(facts.length, 8);
    assert.equal(facts[7]!.name, 'NVIDIA H100 80GB HBM3');
    assert.equal(facts[7]!.memoryTotalBytes, 81559 * MIB);
    assert.match(facts[7]!.uuid, /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(new Set(facts.map((f) => f.uuid)).size, 8);
  }
});

test('query: an invalid field prints what nvidia-smi prints, exit 2', async () => {
  const r = await runFake(['--query-gpu=bogus.field', '--format=csv']);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, readFileSync(fixturePath('nvidia-smi-query-gpu-invalid-field-error.txt'), 'utf8'));
});

for (const file of DMON_FIXTURES) {
  test(`replay ${file}: the captured bytes come back`, async () => {
    const text = readFileSync(fixturePath(file), 'utf8');
    const rows = parseDmonText(text).samples.length;
    const r = await runFake(['dmon', '-c', String(rows)], { ...FAST, FAKE_NVIDIA_SMI_REPLAY: fixturePath(file) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, text.endsWith('\n') ? text : text + '\n');
  });
}

test('fault garbage: garbage lines interleaved, samples still readable', async () => {
  const r = await runFake(['dmon', '-c', '10'], { ...FAST, FAKE_NVIDIA_SMI_FAULT: 'garbage', FAKE_NVIDIA_SMI_FAULT_AFTER: '2' });
  const parsed = parseDmonText(r.stdout);
  assert.equal(parsed.samples.length, 10);
  assert.ok(parsed.invalidLines >= 7, `invalid ${parsed.invalidLines}`);
});

test('fault header-change: another column set mid-stream', async () => {
  const r = await runFake(['dmon', '-s', 'pu', '-c', '6'], { ...FAST, FAKE_NVIDIA_SMI_FAULT: 'header-change', FAKE_NVIDIA_SMI_FAULT_AFTER: '3', FAKE_NVIDIA_SMI_FAULT_COLUMNS: 'm' });
  const parsed = parseDmonText(r.stdout);
  assert.equal(parsed.headers, 2);
  assert.equal(parsed.invalidLines, 0);
  assert.ok(parsed.samples[2]!.values.has('infermeter_gpu_power_watts'));
  assert.ok(!parsed.samples[3]!.values.has('infermeter_gpu_power_watts'));
  assert.ok(parsed.samples[3]!.values.has('infermeter_gpu_memory_used_bytes'));
});

test('fault crash: exits non-zero after N sample lines', async () => {
  const r = await runFake(['dmon'], { ...FAST, FAKE_NVIDIA_SMI_FAULT: 'crash', FAKE_NVIDIA_SMI_FAULT_AFTER: '4' });
  assert.notEqual(r.code, 0);
  assert.equal(parseDmonText(r.stdout).samples.length, 4);
  assert.match(r.stderr, /GPU is lost/);
});

test('fault hang: header then nothing; SIGTERM exits 0', async () => {
  const r = await runFake(['dmon'], { ...FAST, FAKE_NVIDIA_SMI_FAULT: 'hang' }, 600);
  assert.equal(r.code, 0);
  assert.equal(r.signal, null);
  const parsed = parseDmonText(r.stdout);
  assert.equal(parsed.headers, 1);
  assert.equal(parsed.samples.length, 0);
});

test('SIGTERM while streaming samples exits 0', async () => {
  const r = await runFake(['dmon', '-s', 'pucvmet'], { FAKE_NVIDIA_SMI_PERIOD_MS: '20' }, 700);
  assert.equal(r.code, 0);
  assert.ok(parseDmonText(r.stdout).samples.length >= 1);
});

test('follows a simulator\'s load read from its vLLM /metrics', async () => {
  let running = 0;
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} ${running}\nvllm:kv_cache_usage_perc{model_name="m"} ${running > 0 ? 0.8 : 0}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const env = { FAKE_NVIDIA_SMI_SIM_URL: url, FAKE_NVIDIA_SMI_MODEL: 'NVIDIA L4' };
    const idle = parseDmonText((await runFake(['dmon', '-s', 'pum', '-c', '1'], env)).stdout).samples[0]!;
    running = 16;
    const busy = parseDmonText((await runFake(['dmon', '-s', 'pum', '-c', '1'], env)).stdout).samples[0]!;
    const v = (s: typeof idle, m: string) => s.values.get(`infermeter_gpu_${m}`)!;
    assert.equal(v(idle, 'sm_utilization_ratio'), 0);
    assert.ok(v(busy, 'sm_utilization_ratio') > 0.9);
    assert.ok(v(busy, 'power_watts') > 3 * v(idle, 'power_watts'));
    assert.ok(v(busy, 'memory_used_bytes') > v(idle, 'memory_used_bytes'));
    const q = await runFake(['--query-gpu=utilization.gpu,memory.used', '--format=csv,noheader,nounits'], env);
    assert.ok(Number(parseQueryCsv(q.stdout, ['utilization.gpu', 'memory.used']).rows[0]![0]) > 90);
  } finally {
    server.close();
  }
});

test('GPM columns follow the simulator: DRAM bandwidth with the decode batch, SM occupancy with prefill', async () => {
  let running = 0;
  let prefillTps = 0;
  const t0 = Date.now();
  const server = createServer((req, res) => {
    const prompt = Math.round(((Date.now() - t0) / 1000) * prefillTps);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`vllm:num_requests_running{model_name="m"} ${running}\nvllm:prompt_tokens_total{model_name="m"} ${prompt}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const last = async () => {
    const r = await runFake(['dmon', '-s', 'u', '-c', '5', '--gpm-metrics', '3,10'], { FAKE_NVIDIA_SMI_SIM_URL: url, FAKE_NVIDIA_SMI_PERIOD_MS: '150' });
    const parsed = parseDmonText(r.stdout);
    assert.equal(parsed.invalidLines, 0, parsed.invalidReasons.join('; '));
    assert.equal(parsed.samples[0]!.values.get('infermeter_gpu_dram_bandwidth_utilization_ratio'), null, 'GPM needs two samples');
    const s = parsed.samples.at(-1)!;
    return { dram: s.values.get('infermeter_gpu_dram_bandwidth_utilization_ratio')!, occupancy: s.values.get('infermeter_gpu_sm_occupancy_ratio')! };
  };
  try {
    const idle = await last();
    running = 16;
    const decode = await last();
    running = 2;
    prefillTps = 8000;
    const prefill = await last();
    assert.deepEqual(idle, { dram: 0, occupancy: 0 });
    assert.ok(decode.dram > 0.7, `decode-heavy DRAM ${decode.dram}`);
    assert.ok(prefill.occupancy > 0.5, `prefill-heavy occupancy ${prefill.occupancy}`);
    assert.ok(decode.dram > prefill.dram && prefill.occupancy > decode.occupancy, JSON.stringify({ decode, prefill }));
  } finally {
    server.close();
  }
});
