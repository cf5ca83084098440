/**
 * Live reload: POST /-/reload (with --web.enable-lifecycle) and SIGHUP re-read the config
 * file. A new SLO threshold judges the next requests at once (histogram buckets stay until
 * restart), a new allowlist labels the next requests, a stream in flight finishes whole, a
 * broken file keeps the running config and moves the reload gauges; under --workers 2 the
 * log level reaches the workers.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { rawPost, scrape, startProxy, sumSamples, waitForMetrics } from '../helpers.js';

let upstream: FakeUpstream;
const dir = mkdtempSync(join(tmpdir(), 'infermeter-reload-'));
before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());

const streamBody = (model: string, chunks: number, gapMs: number) => ({ model, stream: true, fake: { schedule: { firstMs: 5, chunks, gapMs } } });
const ttft = (s: Parameters<typeof sumSamples>[0], result: string) => sumSamples(s, 'infermeter_slo_requests_total', { slo: 'ttft', result });

async function reload(metricsBase: string): Promise<{ status: number; body: string }> {
  const res = await request(`${metricsBase}/-/reload`, { method: 'POST' });
  return { status: res.statusCode, body: await res.body.text() };
}

test('POST /-/reload: a new TTFT threshold judges the next requests, the stream in flight finishes whole, buckets stay; a broken file keeps the old config', async () => {
  const file = join(dir, 'post.yml');
  writeFileSync(file, 'models: [fake-model]\nslos:\n  default:\n    ttft: 1s\n');
  const proxy = await startProxy({ upstream: upstream.url, config: file, webEnableLifecycle: 'true' });
  const base = proxy.metricsUrl.replace(/\/metrics$/, '');
  try {
    const s0 = (await scrape(proxy.metricsUrl)).samples;
    assert.equal(sumSamples(s0, 'infermeter_config_last_reload_successful'), 1);
    const startedAt = sumSamples(s0, 'infermeter_config_last_reload_success_timestamp_seconds');
    assert.ok(Math.abs(startedAt - Date.now() / 1000) < 60, 'the start counts as the first load');

    await rawPost(`${proxy.url}/v1/chat/completions`, streamBody('fake-model', 3, 5));
    await rawPost(`${proxy.url}/v1/chat/completions`, streamBody('fake-model-2', 3, 5));
    let s = await waitForMetrics(proxy.metricsUrl, (x) => ttft(x, 'good') === 2);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'other' }), 1, 'fake-model-2 is not in the allowlist');

    // A stream in flight across the reload.
    const inFlight = rawPost(`${proxy.url}/v1/chat/completions`, streamBody('fake-model', 30, 40));
    await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_in_flight') === 1);
    // 3 ms: under what the first token takes (5 ms), and not one of the TTFT bucket boundaries.
    writeFileSync(file, 'models: [fake-model, fake-model-2]\nslos:\n  default:\n    ttft: 3ms\n');
    await new Promise((r) => setTimeout(r, 5));
    const r = await reload(base);
    assert.equal(r.status, 200, r.body);
    assert.match(r.body, /^config reloaded/);
    s = (await scrape(proxy.metricsUrl)).samples;
    assert.equal(sumSamples(s, 'infermeter_slo_threshold_seconds', { slo: 'ttft', gen_ai_request_model: 'default' }), 0.003);
    assert.ok(sumSamples(s, 'infermeter_config_last_reload_success_timestamp_seconds') > startedAt);

    await rawPost(`${proxy.url}/v1/chat/completions`, streamBody('fake-model-2', 3, 5));
    const done = await inFlight;
    assert.equal(done.status, 200);
    assert.match(done.body.toString(), /tok29[\s\S]*\[DONE\]/, 'the stream in flight finished whole');
    s = await waitForMetrics(proxy.metricsUrl, (x) => ttft(x, 'bad') === 2);
    assert.equal(ttft(s, 'good'), 2, 'what was judged before stays');
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'fake-model-2' }), 1, 'the new allowlist labels the next request');
    assert.ok(!s.some((x) => x.name === 'gen_ai_server_time_to_first_token_seconds_bucket' && x.labels['le'] === '0.003'), 'bucket boundaries stay until restart');

    // A broken file: 500 naming the problem, the running config stays, the gauge says 0.
    writeFileSync(file, 'slos:\n  default:\n    ttft: 1s\nupstrem: http://typo\n');
    const bad = await reload(base);
    assert.equal(bad.status, 500);
    assert.match(bad.body, /unknown key\(s\): upstrem/);
    s = (await scrape(proxy.metricsUrl)).samples;
    assert.equal(sumSamples(s, 'infermeter_config_last_reload_successful'), 0);
    assert.equal(sumSamples(s, 'infermeter_slo_threshold_seconds', { slo: 'ttft', gen_ai_request_model: 'default' }), 0.003, 'the running thresholds stay');
    await rawPost(`${proxy.url}/v1/chat/completions`, streamBody('fake-model', 3, 5));
    await waitForMetrics(proxy.metricsUrl, (x) => ttft(x, 'bad') === 3);

    writeFileSync(file, 'slos:\n  default:\n    ttft: 2s\n');
    assert.equal((await reload(base)).status, 200);
    assert.equal(sumSamples((await scrape(proxy.metricsUrl)).samples, 'infermeter_config_last_reload_successful'), 1);
  } finally {
    await proxy.close();
  }
});

test('POST /-/reload is refused without --web.enable-lifecycle; other methods stay 405', async () => {
  const proxy = await startProxy({ upstream: upstream.url });
  const base = proxy.metricsUrl.replace(/\/metrics$/, '');
  try {
    const r = await reload(base);
    assert.equal(r.status, 403);
    assert.match(r.body, /--web\.enable-lifecycle/);
    const del = await request(`${base}/metrics`, { method: 'DELETE' });
    assert.equal(del.statusCode, 405);
    await del.body.dump();
  } finally {
    await proxy.close();
  }
});

for (const workers of ['1', '2']) {
  test(`SIGHUP${workers === '2' ? ' under --workers 2' : ''}: new threshold for the next requests, restart-only settings named, a broken file logged exactly and kept out, the log level reaches every process`, async () => {
    const file = join(dir, `hup-${workers}.yml`);
    writeFileSync(file, 'slos:\n  default:\n    ttft: 1s\n');
    const p = InfermeterProcess.forUpstream(upstream.url, ['--config', file, '--workers', workers, '--shutdown-timeout', '5s'], {});
    await p.start();
    const metrics = `${p.metricsUrl}/metrics`;
    const wait = async (msg: string, n = 1) => {
      const deadline = Date.now() + 5000;
      while (p.logsMatching(msg).length < n) {
        assert.ok(Date.now() < deadline, `no "${msg}" log line; logs: ${JSON.stringify(p.logs.slice(-5))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return p.logsMatching(msg).at(-1)!;
    };
    try {
      await rawPost(`${p.proxyUrl}/v1/chat/completions`, streamBody('fake-model', 3, 5));
      await waitForMetrics(metrics, (x) => ttft(x, 'good') === 1);
      const inFlight = rawPost(`${p.proxyUrl}/v1/chat/completions`, streamBody('fake-model', 25, 40));
      await waitForMetrics(metrics, (x) => sumSamples(x, 'infermeter_requests_in_flight') === 1);

      writeFileSync(file, 'logLevel: debug\nbodyLimit: 1mb\nslos:\n  default:\n    ttft: 3ms\n');
      p.signal('SIGHUP');
      await wait('config reloaded');
      const warn = await wait('config reload: these settings differ in the new config but change only on restart; they keep their running values');
      assert.deepEqual(warn['settings'], ['--body-limit']);
      assert.equal(warn['level'], 40);
      await rawPost(`${p.proxyUrl}/v1/chat/completions`, streamBody('fake-model', 3, 5));
      const done = await inFlight;
      assert.match(done.body.toString(), /tok24[\s\S]*\[DONE\]/, 'the stream in flight finished whole');
      await waitForMetrics(metrics, (x) => ttft(x, 'bad') === 2);

      writeFileSync(file, 'slos:\n  default:\n    ttft: -1s\n');
      p.signal('SIGHUP');
      const failed = await wait('config reload failed; the running config stays');
      assert.equal(failed['level'], 50);
      assert.match(String(failed['err']), /slos\.default\.ttft/);
      const s = (await scrape(metrics)).samples;
      assert.equal(sumSamples(s, 'infermeter_config_last_reload_successful'), 0);
      assert.equal(sumSamples(s, 'infermeter_slo_threshold_seconds', { slo: 'ttft', gen_ai_request_model: 'default' }), 0.003);
      assert.equal(p.logs.filter((l) => l.level >= 50).length, 1, 'one error line: the failed reload');
    } finally {
      assert.equal(await p.stop(), 0);
    }
    // The debug level from the reload reached the proxy: its shutdown debug lines are there.
    const fromProxy = p.logs.filter((l) => l.level === 20 && l.msg === 'proxy listener closed; waiting for the requests in flight');
    if (workers === '1') assert.equal(fromProxy.filter((l) => l['thread'] === undefined).length, 1, 'the proxy thread took the new log level');
    else assert.equal(new Set(fromProxy.map((l) => l['worker'])).size, 2, 'each worker took the new log level');
  });
}
