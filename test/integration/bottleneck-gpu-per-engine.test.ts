// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * Each model's verdict reads its own engine's GPUs (issue 26 on issue 25's verdict): two
 * simulators serving different models behind one infermeter (`upstreams:` with `gpus:`),
 * a fake nvidia-smi whose GPU 1 only is power-throttled, TPOT over a 30 ms SLO on both (the
 * simulator's step is 45 ms). The model on GPU 1 is gpu_throttle, citing GPU 1 of its
 * upstream; the model on GPU 0 is not, though the machine's worst GPU is throttled.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { runLoad } from '../../src/sim/load.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import type { StatusDocument } from '../../src/exporters/ui/status-json.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape } from '../helpers.js';
import { status, statusValidator, statusWhen } from './ui-helpers.js';

const sims: Simulator[] = [];
let meter: InfermeterProcess | null = null;
let stopped = false;
const agent = new Agent({ connections: null });
const dir = mkdtempSync(join(tmpdir(), 'bottleneck-per-engine-'));
after(async () => {
  stopped = true;
  await agent.destroy();
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

const verdict = (d: StatusDocument, model: string) => d.models.find((m) => m.model === model)?.bottleneck ?? null;

test('GPU 1 throttled, engine-b on GPU 1: model-b is gpu_throttle citing GPU 1 of engine-b; model-a on GPU 0 is not', { timeout: 120_000 }, async () => {
  const a = await startSimulator({ listen: '127.0.0.1:0', models: 'model-a' });
  const b = await startSimulator({ listen: '127.0.0.1:0', models: 'model-b' });
  sims.push(a, b);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, [
    'upstreams:',
    `  - { name: engine-a, url: "${a.url}", gpus: [0] }`,
    `  - { name: engine-b, url: "${b.url}", gpus: [1] }`,
    'slos:',
    '  default:',
    '    tpot: 30ms',
    '',
  ].join('\n'));
  meter = new InfermeterProcess(
    ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--engine-interval', '0.25s',
      '--bottleneck-interval', '0.5s', '--bottleneck-window', '4s', '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-source', 'nvidia-smi'],
    { FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_PERIOD_MS: '100', FAKE_NVIDIA_SMI_THROTTLE: 'power', FAKE_NVIDIA_SMI_THROTTLE_GPUS: '1' },
  );
  await meter.start();
  const base = meter.metricsUrl;
  const loop = async (model: string) => {
    while (!stopped) await runLoad({ url: meter!.proxyUrl, model, route: 'chat', requests: 1, maxTokens: 16, prompt: `hello ${model}`, dispatcher: agent });
  };
  const loads = ['model-a', 'model-a', 'model-b', 'model-b'].map((m) => loop(m));

  const doc = await statusWhen(base, (d) => verdict(d, 'model-b')?.kind === 'gpu_throttle' && verdict(d, 'model-a') !== null, 60_000);
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));
  const vb = verdict(doc, 'model-b')!;
  const pviol = vb.evidence.find((e) => e.signal === 'gpuPowerViolation');
  assert.ok(pviol && pviol.value! >= 0.1, JSON.stringify(vb.evidence));
  assert.equal(pviol.basis, 'GPU 1 of upstream engine-b (infermeter_gpu_engine_info)');
  assert.ok(vb.evidence.some((e) => e.signal === 'latencyOverTarget' && e.value! >= 1), JSON.stringify(vb.evidence));

  // Over several evaluations model-a, on the unthrottled GPU 0, never takes GPU 1's throttle.
  const kindsA = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const { doc: d } = await status(base);
    const va = verdict(d, 'model-a');
    if (va) kindsA.add(va.kind);
    for (const e of va?.evidence ?? []) {
      if (e.signal.startsWith('gpu')) assert.equal(e.basis, 'GPU 0 of upstream engine-a (infermeter_gpu_engine_info)', JSON.stringify(e));
      if (e.signal.startsWith('engine') || e.signal.startsWith('kvCache')) assert.equal(e.basis, 'engine series of upstream engine-a', JSON.stringify(e));
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(!kindsA.has('gpu_throttle'), `model-a's verdicts: ${[...kindsA].join(', ')}`);

  // The gauge agrees: one-hot gpu_throttle for model-b only.
  const { samples } = await scrape(`${base}/metrics`);
  const gauge = (model: string) => samples.find((s) => s.name === 'infermeter_bottleneck' && s.labels['gen_ai_request_model'] === model && s.labels['kind'] === 'gpu_throttle')?.value;
  assert.equal(gauge('model-b'), 1);
  assert.equal(gauge('model-a'), 0);
  console.log(JSON.stringify({ modelA: [...kindsA], modelB: vb.kind, modelBEvidence: vb.evidence.slice(0, 3) }));
  stopped = true;
  await Promise.all(loads);
});
