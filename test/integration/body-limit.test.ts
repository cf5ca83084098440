/**
 * A body over --body-limit is refused at its headers and every client reads the 413: curl
 * (which asks `Expect: 100-continue` for a large upload) gets no `100 Continue`, only the 413;
 * the `openai` SDK (which sends the body at once) reads the 413, not a reset connection; a
 * chunked body (no Content-Length) is refused once it passes the limit and still reads its 413.
 * The body names the limit. Five uploads each, since a lost 413 was a race.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

/** --body-limit 2mb. */
const LIMIT = 2_000_000;
let upstream: FakeUpstream;
let im: InfermeterProcess;
const dir = mkdtempSync(join(tmpdir(), 'infermeter-body-limit-'));
const big = join(dir, 'big.json');
/** Four times the limit: the client is still sending when the 413 is written. */
const content = JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'a'.repeat(4 * LIMIT) }] });
writeFileSync(big, content);

before(async () => {
  upstream = await startFakeUpstream();
  im = InfermeterProcess.forUpstream(upstream.url, ['--body-limit', '2mb'], {});
  await im.start();
});
after(async () => {
  await im.stop();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

function curl(extra: string[]): { rc: number | null; code: string; body: string; trace: string } {
  const out = join(dir, 'out');
  writeFileSync(out, '');
  const r = spawnSync('curl', ['-sS', '-v', '-o', out, '-w', '%{http_code}', '--data-binary', `@${big}`, '-H', 'content-type: application/json',
    ...extra, `${im.proxyUrl}/v1/chat/completions`], { encoding: 'utf8', timeout: 30_000 });
  return { rc: r.status, code: r.stdout, body: spawnSync('cat', [out], { encoding: 'utf8' }).stdout, trace: r.stderr };
}

function assertNamesLimit(body: string): void {
  const doc = JSON.parse(body) as { error: { type: string; message: string } };
  assert.equal(doc.error.type, 'request_too_large');
  assert.match(doc.error.message, /--body-limit/);
  assert.match(doc.error.message, /--body-limit is 2000000 bytes/);
}

test('curl with a Content-Length over the limit: 413 at the headers, no 100 Continue, five of five', () => {
  for (let i = 0; i < 5; i++) {
    const r = curl([]);
    assert.equal(r.rc, 0, `upload ${i}: curl exit ${r.rc}\n${r.trace.slice(-2000)}`);
    assert.equal(r.code, '413', `upload ${i}`);
    assert.match(r.trace, /> Expect: 100-continue/i, 'curl asked for 100 Continue (the case under test)');
    assert.doesNotMatch(r.trace, /< HTTP\/1\.1 100/, `upload ${i}: the proxy sent 100 Continue for a body it refuses`);
    assertNamesLimit(r.body);
  }
  assert.equal(upstream.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').length, 0, 'no refused body reached the upstream');
});

test('curl without Expect (the body sent at once) reads the 413, five of five', () => {
  for (let i = 0; i < 5; i++) {
    const r = curl(['-H', 'Expect:']);
    assert.equal(r.rc, 0, `upload ${i}: curl exit ${r.rc}\n${r.trace.slice(-2000)}`);
    assert.equal(r.code, '413', `upload ${i}`);
    assertNamesLimit(r.body);
  }
});

test('a chunked body over the limit reads its 413, five of five', () => {
  for (let i = 0; i < 5; i++) {
    const r = curl(['-H', 'Transfer-Encoding: chunked', '-H', 'Expect:']);
    assert.equal(r.rc, 0, `upload ${i}: curl exit ${r.rc}\n${r.trace.slice(-2000)}`);
    assert.equal(r.code, '413', `upload ${i}`);
    assertNamesLimit(r.body);
  }
});

test('the openai SDK reads the 413 (an APIError, not a connection error it would retry), five of five', async () => {
  const client = new OpenAI({ baseURL: `${im.proxyUrl}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  const messages = [{ role: 'user' as const, content: 'a'.repeat(4 * LIMIT) }];
  for (let i = 0; i < 5; i++) {
    const err = await client.chat.completions.create({ model: 'fake-model', messages }).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, `try ${i}: ${String(err)}`);
    assert.ok(!(err instanceof OpenAI.APIConnectionError), `try ${i}: a connection error: ${String(err)}`);
    assert.equal(err.status, 413, `try ${i}`);
    assert.match(String(err.message), /--body-limit/);
  }
  // The same connection serves a request after a refused one.
  const ok = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }).asResponse();
  assert.equal(ok.status, 200);
});
