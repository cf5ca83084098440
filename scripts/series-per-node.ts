/**
 * Series one infermeter node adds to a Prometheus, measured: the default install (one model
 * served by the simulator, 8 GPUs from the fake nvidia-smi, engine and host collectors on, a
 * request of every kind sent) scraped as text, with the classic buckets and with
 * --classic-histograms=false; then the worst case of series-count.ts (10 models, 20 tenants
 * and `other`, SLOs of examples/infermeter.yaml) both ways. Every sample line of the text
 * exposition is one series to a classic Prometheus. docs/deploy.md "Fleet" quotes the output.
 *
 *   npm run build && node dist/scripts/series-per-node.js
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { countLines, countSeries, total } from '../src/metrics/series-count.js';
import { loadConfigFile } from '../src/config.js';
import { InfermeterProcess } from '../test/fakes/infermeter-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = `${ROOT}dist/src/cli.js`;

function startSim(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'simulate', '--listen', '127.0.0.1:0', '--speed', '20'], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const read = (b: Buffer) => {
      out += b.toString();
      const m = /at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`simulator exited ${code}`)));
  });
}

async function send(proxy: string, model: string): Promise<void> {
  const post = (path: string, body: unknown) => fetch(`${proxy}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text());
  await post('/v1/chat/completions', { model, stream: true, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  await post('/v1/chat/completions', { model, stream: false, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  await post('/v1/completions', { model, stream: true, max_tokens: 8, prompt: 'hi' });
  await post('/v1/completions', { model, stream: false, max_tokens: 8, prompt: 'hi' });
  await fetch(`${proxy}/v1/models`).then((r) => r.text());
}

async function defaultInstall(classic: boolean): Promise<Map<string, number>> {
  const sim = await startSim();
  const im = new InfermeterProcess(['--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--nvidia-smi', `${ROOT}bin/fake-nvidia-smi`, '--engine-interval', '1s', '--host-interval', '1s', '--classic-histograms', String(classic)],
    { FAKE_NVIDIA_SMI_GPUS: '8', FAKE_NVIDIA_SMI_SIM_URL: sim.url });
  try {
    await im.start();
    await send(im.proxyUrl, 'meta-llama/Llama-2-7b-chat-hf');
    await new Promise((r) => setTimeout(r, 4000)); // every collector has sampled
    return countLines(await (await fetch(`${im.metricsUrl}/metrics`)).text());
  } finally {
    await im.stop();
    sim.child.kill('SIGTERM');
  }
}

const NATIVE = ['gen_ai_server_time_to_first_token_seconds', 'infermeter_time_to_first_output_seconds', 'gen_ai_server_time_per_output_token_seconds', 'gen_ai_server_request_duration_seconds', 'infermeter_inter_chunk_latency_seconds'];
/**
 * Series in a Prometheus that scrapes natively (2.42 with the feature on, or an agent with
 * send_native_histograms): each native family is one series per label set, whatever the
 * classic buckets; with classic off the text has 3 lines (+Inf, _sum, _count) per label set.
 */
const nativeSeries = (off: Map<string, number>) => total(off) - NATIVE.reduce((n, f) => n + ((off.get(f) ?? 0) * 2) / 3, 0);
const families = (counts: Map<string, number>, prefix: string) => [...counts].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
const slos = loadConfigFile(`${ROOT}examples/infermeter.yaml`).slos;
const rows: string[] = [];
const off: Record<string, Map<string, number>> = {};
for (const classic of [true, false]) {
  const c = await defaultInstall(classic);
  if (!classic) off['default'] = c;
  const gpu = families(c, 'infermeter_gpu_');
  const engine = families(c, 'infermeter_engine_');
  rows.push(`| default install (1 model, 8 GPUs), classic ${classic ? 'on' : 'off'} | ${total(c)} | ${gpu} | ${engine} | ${total(c) - gpu - engine} |`);
}
for (const classic of [true, false]) {
  const c = await countSeries({ models: 10, tenants: 21, tenantLimit: 20, slos, classicHistograms: classic });
  if (!classic) off['worst'] = c;
  rows.push(`| worst case request metrics (10 models, 20 tenants + other), classic ${classic ? 'on' : 'off'} | ${total(c)} | | | ${total(c)} |`);
}
console.log('Series as text lines (a Prometheus scraping the classic way):');
console.log('| node | series in all | GPU | engine | requests, collectors, process |\n|---|---|---|---|---|\n' + rows.join('\n'));
console.log(`\nA Prometheus scraping native histograms (one series per native histogram): default install ${nativeSeries(off['default']!)}, worst case ${nativeSeries(off['worst']!)}`);
