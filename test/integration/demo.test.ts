/** The demo starts the simulator, infermeter and load; serves /metrics; exits 0 on SIGINT. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'undici';
import { ROOT, scrape, sumSamples } from '../helpers.js';

test('infermeter demo serves traffic and /metrics, and exits 0 on SIGINT', async () => {
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, 'demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--rates', '8', '--step', '3s', '--summary-every', '1s'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const deadline = Date.now() + 30_000;
    while (!/done [1-9][0-9.]* req\/s \| TTFT p50\/p99 +[0-9]+\/ *[0-9]+ ms/.test(out)) {
      assert.ok(Date.now() < deadline, `no traffic summary in time:\n${out}`);
      assert.equal(child.exitCode, null, `demo exited early:\n${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const metricsUrl = /infermeter \/metrics\s+(\S+)/.exec(out)![1]!;
    // The page comes first, as the place to look, and it shows the demo's model.
    const page = /^infermeter demo: open the live status page\s+(http:\/\/\S+\/)\n/.exec(out);
    assert.ok(page, `the first line names the page:\n${out}`);
    assert.match(await (await request(page[1]!)).body.text(), /<title>infermeter status<\/title>/);
    const status = (await (await request(`${page[1]!}api/v1/status`)).body.json()) as { models: { model: string }[] };
    assert.deepEqual(status.models.map((m) => m.model), ['meta-llama/Llama-3.1-8B-Instruct']);
    // Every generation API carries some of the demo's load (a 3 s step at 8 req/s: each at least one request).
    let samples = (await scrape(metricsUrl)).samples;
    const apis = ['chat_completions', 'completions', 'messages', 'responses'];
    while (apis.some((route) => sumSamples(samples, 'infermeter_requests_total', { route, outcome: 'ok' }) === 0)) {
      assert.ok(Date.now() < deadline + 15_000, `not every API had traffic: ${apis.map((r) => `${r} ${sumSamples(samples, 'infermeter_requests_total', { route: r })}`).join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
      samples = (await scrape(metricsUrl)).samples;
    }
    assert.ok(sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count') > 0);
    assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'gpu' }), 1, 'the fake nvidia-smi feeds the GPU collector');
    assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine' }), 1, 'the simulator feeds the engine collector');
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0);
    assert.match(out, /demo stopped/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
