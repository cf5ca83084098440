/**
 * Hostile and malformed requests, over raw sockets: malformed JSON and unknown fields are
 * forwarded unchanged (the upstream decides); oversized bodies get 413; request-smuggling
 * shapes and absurd headers are refused before anything reaches the upstream; absolute-URI
 * targets and Host headers never pick another upstream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startHostileUpstream, type Hostile } from '../fakes/hostile-upstream.js';
import { report, rss, openFds, startInfermeterProcess, totalRequests, type Infermeter } from './harness.js';

let upstream: Hostile;
let im: Infermeter;
before(async () => {
  upstream = await startHostileUpstream();
  im = await startInfermeterProcess(upstream.url, ['--body-limit', '1mb']);
});
after(async () => {
  await im.stop();
  await upstream.close();
});

/** Sends raw bytes, returns the raw answer (until the server closes or goes quiet). */
async function raw(bytes: string | Buffer): Promise<string> {
  const s = connect(Number(new URL(im.url).port), '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  let out = '';
  s.on('data', (d: Buffer) => (out += d.toString('latin1')));
  s.on('error', () => undefined);
  s.write(bytes);
  await new Promise<void>((resolve) => {
    const quiet = () => setTimeout(() => resolve(), 300);
    let t = quiet();
    s.on('data', () => {
      clearTimeout(t);
      t = quiet();
    });
    s.once('close', () => {
      clearTimeout(t);
      resolve();
    });
  });
  s.destroy();
  return out;
}

function status(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
}

function echoed(answer: string): { method: string; url: string; headers: Record<string, string>; body: Buffer } {
  const doc = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '')) as { method: string; url: string; headers: Record<string, string>; body: string };
  return { ...doc, body: Buffer.from(doc.body, 'base64') };
}

const post = (path: string, body: string, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Fault: echo\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

interface Case { name: string; send: string | Buffer; check: (answer: string) => boolean; reachesUpstream: boolean }

const malformed = '{"model": "m", "messages": [{"role": "user", "content": "unterminated';
const unknownFields = '{"model":"m","stream":false,"frobnicate":{"x":[1,2,3]},"top_k":-7}';
const cases: Case[] = [
  { name: 'malformed JSON body is forwarded unchanged', send: post('/v1/chat/completions', malformed), reachesUpstream: true, check: (a) => status(a) === 200 && echoed(a).body.toString() === malformed },
  { name: 'unknown fields are forwarded unchanged', send: post('/v1/chat/completions', unknownFields), reachesUpstream: true, check: (a) => status(a) === 200 && echoed(a).body.toString() === unknownFields },
  { name: 'body over --body-limit gets 413', send: post('/v1/chat/completions', `{"x":"${'a'.repeat(1_100_000)}"}`), reachesUpstream: false, check: (a) => status(a) === 413 && a.includes('"type":"request_too_large"') },
  { name: 'chunked body over --body-limit gets 413', send: `POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${(600_000).toString(16)}\r\n${'a'.repeat(600_000)}\r\n${(600_000).toString(16)}\r\n${'a'.repeat(600_000)}\r\n0\r\n\r\n`, reachesUpstream: false, check: (a) => status(a) === 413 },
  { name: 'Content-Length with Transfer-Encoding is refused', send: `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n`, reachesUpstream: false, check: (a) => status(a) === 400 && !a.includes('smuggled') },
  { name: 'two different Content-Lengths are refused', send: `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd`, reachesUpstream: false, check: (a) => status(a) === 400 },
  { name: 'obfuscated Transfer-Encoding is refused', send: `POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\nabcd`, reachesUpstream: false, check: (a) => status(a) === 400 },
  { name: 'a 64 KiB header is refused', send: `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(65_536)}\r\n\r\n`, reachesUpstream: false, check: (a) => status(a) === 431 || status(a) === 400 },
  { name: 'absolute-URI target goes to the configured upstream, path only', send: `POST http://evil.example:8000/v1/chat/completions?x=1 HTTP/1.1\r\nHost: evil.example:8000\r\nX-Fault: echo\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, reachesUpstream: true, check: (a) => status(a) === 200 && echoed(a).url === '/v1/chat/completions?x=1' && echoed(a).headers['host'] === `127.0.0.1:${upstream.port}` },
  { name: 'a foreign Host header never changes the upstream', send: `GET /v1/echo HTTP/1.1\r\nHost: evil.example\r\nX-Fault: echo\r\nConnection: close\r\n\r\n`, reachesUpstream: true, check: (a) => status(a) === 200 && echoed(a).headers['host'] === `127.0.0.1:${upstream.port}` },
];

test('bad input: each shape gets the right answer, and only forwardable ones reach the upstream', async () => {
  const fdsBefore = openFds(im.pid);
  const before = await totalRequests(im.metricsUrl);
  let anomalies = 0;
  let bytes = 0;
  let forwarded = 0;
  let peak = rss(im.pid);
  for (const c of cases) {
    const seen = upstream.requests;
    const answer = await raw(c.send);
    bytes += answer.length;
    peak = Math.max(peak, rss(im.pid));
    const reached = upstream.requests > seen;
    if (reached) forwarded++;
    let ok = false;
    try {
      ok = c.check(answer) && reached === c.reachesUpstream;
    } catch {
      ok = false;
    }
    if (!ok) {
      anomalies++;
      console.log(`ANOMALY ${c.name}: reached upstream=${reached}\n${answer.slice(0, 300)}`);
    }
  }
  const counted = (await totalRequests(im.metricsUrl, 3000, before + forwarded + 2)) - before;
  report({ scenario: 'bad input (malformed, oversized, smuggling, headers, foreign hosts)', requests: cases.length, bytesCompared: bytes, anomalies, peakRssMiB: Math.round(peak / 2 ** 20), fdsBefore, fdsAfter: openFds(im.pid) });
  assert.equal(anomalies, 0);
  // Forwarded requests and the two 413s are counted; parser-level refusals never became requests.
  assert.equal(counted, forwarded + 2);
});
