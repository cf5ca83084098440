/**
 * The proxy writes a read to the client before framing it unless the framer says the read
 * must be framed first (it could hold part of the injected usage event, which is dropped).
 * Whatever the read boundaries, the client must get exactly the upstream's bytes minus that
 * event, and metering must see every token chunk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseFramer } from '../../../src/lib/sse.js';
import { RequestMeter } from '../../../src/proxy/meter.js';

const token = (t: string, nl: string) => `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(t)}},"finish_reason":null}]}${nl}${nl}`;
const usage = (nl: string) => `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}${nl}${nl}`;

function stream(nl: string): { upstream: Buffer; client: Buffer } {
  const head = `data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}${nl}${nl}` + ['Hel', 'lo ', 'usage', ' é✓'].map((t) => token(t, nl)).join('');
  const tail = `data: [DONE]${nl}${nl}`;
  return { upstream: Buffer.from(head + usage(nl) + tail), client: Buffer.from(head + tail) };
}

/** The relay loop of src/proxy/exchange.ts, over the given read boundaries. */
function relay(upstream: Buffer, cuts: number[]): { out: Buffer; meter: RequestMeter } {
  const meter = new RequestMeter(0, true);
  const framer = new SseFramer(true, meter.onData, meter.onOversized);
  const out: Buffer[] = [];
  let from = 0;
  for (const at of [...cuts, upstream.length]) {
    const read = upstream.subarray(from, at);
    from = at;
    if (read.length === 0) continue;
    if (framer.mustFrameFirst(read)) {
      const framed = framer.feed(read);
      if (framed) out.push(framed);
    } else {
      out.push(read);
      framer.observe(read);
    }
  }
  const tail = framer.end();
  if (tail) out.push(tail);
  return { out: Buffer.concat(out), meter };
}

for (const nl of ['\n', '\r\n']) {
  const { upstream, client } = stream(nl);
  const label = nl === '\n' ? 'LF' : 'CRLF';

  test(`${label}: every read boundary and every pair of them: exact bytes minus the usage event, every token counted`, () => {
    let cases = 0;
    for (let a = 1; a < upstream.length; a++) {
      for (let b = a; b < upstream.length; b += a === b ? 1 : 7) {
        const { out, meter } = relay(upstream, a === b ? [a] : [a, b]);
        assert.ok(out.equals(client), `reads cut at ${a}, ${b}: got ${JSON.stringify(out.toString())}`);
        assert.equal(meter.tokenChunks, 4, `reads cut at ${a}, ${b}`);
        assert.equal(meter.completionTokens, 4);
        cases++;
      }
    }
    assert.ok(cases > 10_000, `${cases} cases`);
  });

  test(`${label}: one byte per read`, () => {
    const { out, meter } = relay(upstream, Array.from({ length: upstream.length - 1 }, (_, i) => i + 1));
    assert.ok(out.equals(client));
    assert.equal(meter.tokenChunks, 4);
  });
}

test('token chunks that end on a line break are forwarded before framing; a usage or partial read is framed first', () => {
  const meter = new RequestMeter(0, true);
  const framer = new SseFramer(true, meter.onData, meter.onOversized);
  assert.equal(framer.mustFrameFirst(Buffer.from(token('a', '\n'))), false);
  assert.equal(framer.mustFrameFirst(Buffer.from(usage('\n'))), true);
  assert.equal(framer.mustFrameFirst(Buffer.from('data: {"choi')), true);
  // Without injection nothing is ever held back: always forward first.
  const plain = new SseFramer(false, new RequestMeter(0, false).onData, () => {});
  assert.equal(plain.mustFrameFirst(Buffer.from(usage('\n'))), false);
});
