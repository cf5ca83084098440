/**
 * The upstream check at startup tells the truth and never blocks the proxy: a URL with a path
 * is warned about, naming the fix; an upstream that is down at start is logged (the model
 * list cannot be read), and again when it comes up, after which the first request gets its
 * model's label; an engine that /v1/models reveals and that is not --engine is named.
 * infermeter runs as the real CLI (its metrics thread, its JSON log on stdout).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InfermeterProcess, type LogLine } from '../fakes/infermeter-process.js';
import { rawPost, sumSamples, waitForMetrics } from '../helpers.js';

const WARN = 40;
const INFO = 30;

/** A tiny OpenAI-shaped upstream listing one model, owned by `ownedBy`. */
function upstreamServer(model: string, ownedBy: string): Server {
  return createServer((req, res) => {
    if (req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', owned_by: ownedBy }] }));
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
      res.end('data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\ndata: [DONE]\n\n');
    });
  });
}

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

async function until(pred: () => boolean, ms: number, what: string, logs: () => LogLine[]): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    assert.ok(Date.now() < deadline, `${what} did not happen in ${ms} ms; logs:\n${logs().map((l) => JSON.stringify(l)).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('--upstream with a path (/v1): a warning at start naming the fix; the proxy still starts', async () => {
  const server = upstreamServer('m', 'vllm');
  const port = await listen(server);
  const im = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}/v1`, [], {});
  try {
    await im.start();
    const w = im.logs.filter((l) => l.level === WARN && /has a path \(\/v1\)/.test(l.msg));
    assert.equal(w.length, 1, JSON.stringify(im.logs));
    assert.match(w[0]!.msg, new RegExp(`use --upstream http://127\\.0\\.0\\.1:${port} `));
  } finally {
    await im.stop();
    server.close();
  }
});

test('an upstream without a path: no such warning', async () => {
  const server = upstreamServer('m', 'vllm');
  const port = await listen(server);
  const im = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, [], {});
  try {
    await im.start();
    await until(() => im.logs.some((l) => l.msg === 'upstream models listed'), 5000, 'the model list', () => im.logs);
    assert.equal(im.logs.filter((l) => /has a path/.test(l.msg)).length, 0);
    assert.equal(im.logs.filter((l) => l.level >= WARN).length, 0, JSON.stringify(im.logs));
  } finally {
    await im.stop();
    server.close();
  }
});

test('an upstream that comes up 3 s after infermeter: logged down, then up; the first request after it gets its model label', { timeout: 40_000 }, async () => {
  // The port is held from the start (a released port can be taken by another file running beside
  // this one): until the upstream is up, every connection to it is dropped unanswered.
  const real = upstreamServer('late-model', 'vllm');
  let ready = false;
  const server = createServer((req, res) => (ready ? real.emit('request', req, res) : req.socket.destroy()));
  const port = await listen(server);
  const im = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, [], {});
  try {
    const t0 = Date.now();
    await im.start(); // the proxy does not wait for the upstream
    assert.ok(Date.now() - t0 < 15_000);
    await until(() => im.logs.some((l) => l.level === WARN && /cannot read the upstream's \/v1\/models/.test(l.msg)), 5000, 'the unreadable-list warning', () => im.logs);
    const down = im.logs.find((l) => /cannot read the upstream's \/v1\/models/.test(l.msg))!;
    assert.match(down.msg, /model="other" until it does \(or set --models\)/);
    assert.equal(down['upstream'], `http://127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, Math.max(0, 3000 - (Date.now() - t0))));
    ready = true;
    await until(() => im.logs.some((l) => l.level === INFO && /\/v1\/models answers again/.test(l.msg)), 5000, 'the recovery line', () => im.logs);
    const up = im.logs.find((l) => /\/v1\/models answers again/.test(l.msg))!;
    assert.deepEqual(up['models'], ['late-model']);
    assert.equal(im.logs.filter((l) => /cannot read the upstream's \/v1\/models/.test(l.msg)).length, 1, 'said once, not once per retry');

    const r = await rawPost(`${im.proxyUrl}/v1/chat/completions`, { model: 'late-model', stream: true });
    assert.equal(r.status, 200);
    const s = await waitForMetrics(`${im.metricsUrl}/metrics`, (x) => sumSamples(x, 'infermeter_requests_total') >= 1, 5000);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'late-model' }), 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'other' }), 0);
  } finally {
    await im.stop();
    server.close();
  }
});

test('an upstream whose /v1/models lists nothing: a warning; --models makes it quiet', async () => {
  const empty = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}'));
  const port = await listen(empty);
  const im = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, [], {});
  const fixed = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, ['--models', 'a'], {});
  try {
    await im.start();
    await until(() => im.logs.some((l) => l.level === WARN && /\/v1\/models lists no model/.test(l.msg)), 5000, 'the empty-list warning', () => im.logs);
    await fixed.start();
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(fixed.logs.filter((l) => /v1\/models/.test(l.msg)).length, 0, JSON.stringify(fixed.logs));
  } finally {
    await im.stop();
    await fixed.stop();
    empty.close();
  }
});

test('an engine that /v1/models reveals and that is not --engine is named once', async () => {
  const server = upstreamServer('qwen', 'sglang');
  const port = await listen(server);
  const im = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, ['--engine', 'vllm'], {});
  const right = InfermeterProcess.forUpstream(`http://127.0.0.1:${port}`, ['--engine', 'sglang'], {});
  try {
    await im.start();
    await until(() => im.logs.some((l) => l.level === WARN && /says it is sglang/.test(l.msg)), 5000, 'the engine warning', () => im.logs);
    const w = im.logs.find((l) => /says it is sglang/.test(l.msg))!;
    assert.match(w.msg, /--engine is vllm.*start with --engine sglang/);
    await right.start();
    await until(() => right.logs.some((l) => l.msg === 'upstream models listed'), 5000, 'the model list', () => right.logs);
    assert.equal(right.logs.filter((l) => /says it is/.test(l.msg)).length, 0);
  } finally {
    await im.stop();
    await right.stop();
    server.close();
  }
});
