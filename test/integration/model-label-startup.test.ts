/**
 * The first requests after startup get their model's label, not `other`: records wait (up
 * to 2 s) for the upstream's first /v1/models answer before they are labelled. The
 * upstream here answers /v1/models only once the first request has finished (an awaited
 * event, not a delay that a slow machine could outrun), so that request always finishes first.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rawPost, startProxy, sumSamples, waitForMetrics } from '../helpers.js';

let server: Server;
let upstream = '';
let requestFinished: () => void;
const finished = new Promise<void>((resolve) => (requestFinished = resolve));
before(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/models')) {
      void finished.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'slow-listed-model' }] })));
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
      res.end('data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\ndata: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  upstream = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

test('a request that finishes before the upstream has listed its models is still labelled with its model', async () => {
  const proxy = await startProxy({ upstream });
  try {
    await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'slow-listed-model', stream: true });
    requestFinished();
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1, 5000);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'slow-listed-model' }), 1, 'labelled with its model');
    assert.equal(sumSamples(s, 'infermeter_requests_total', { gen_ai_request_model: 'other' }), 0);
  } finally {
    await proxy.close();
  }
});
