/**
 * Reading traces (src/bench/replay/trace.ts) and merging them into a workload
 * (src/bench/replay/workload.ts): Mooncake lines as recorded elsewhere, infermeter's fields,
 * a header or a sidecar, and every bad line named by file and line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MOONCAKE_BLOCK_SIZE, parseTrace, readTraceFile } from '../../../src/bench/replay/trace.js';
import { buildWorkload, parseModelMap, unservedModels } from '../../../src/bench/replay/workload.js';
import { ConfigError, UnreadableFileError } from '../../../src/lib/errors.js';
import { readMooncake } from '../../helpers/mooncake.js';
import { ROOT } from '../../helpers.js';

const HAND = `${ROOT}test/fixtures/mooncake-hand-written-synthetic.jsonl`;
const AIPERF = `${ROOT}test/fixtures/mooncake-aiperf-docs-example.jsonl`;

test('plain Mooncake files load with chat, streaming and 512-token blocks; the documentation reader agrees line for line', () => {
  for (const path of [HAND, AIPERF]) {
    const f = readTraceFile(path);
    const doc = readMooncake(readFileSync(path, 'utf8'));
    assert.equal(f.meta.blockSize, MOONCAKE_BLOCK_SIZE);
    assert.equal(f.meta.from, 'default');
    assert.deepEqual(f.records.map((r) => [r.timestamp, r.inputLength, r.outputLength, r.hashIds]), doc.map((r) => [r.timestamp, r.input_length, r.output_length, r.hash_ids]));
    const w = buildWorkload([f], 1, new Map());
    assert.ok(w.requests.every((r) => r.api === 'chat' && r.stream === true && r.model === null));
  }
});

test('infermeter fields are read; the API may be our name, a route label or a path', () => {
  const f = parseTrace([
    '{"timestamp":5,"input_length":20,"output_length":3,"hash_ids":[],"model":"m","api":"messages","stream":false,"outcome":"ok","max_tokens":9,"cached_input_tokens":16,"reasoning_tokens":1,"ttft_ms":12.5,"tpot_ms":3,"e2e_ms":30,"session":"s1","upstream":"a"}',
    '{"timestamp":6,"input_length":20,"output_length":3,"hash_ids":[],"api":"chat_completions"}',
    '{"timestamp":7,"input_length":20,"output_length":3,"hash_ids":[],"api":"/v1/responses"}',
  ].join('\n'), 't.jsonl');
  const [a, b, c] = f.records;
  assert.deepEqual({ ...a!, line: 1 }, {
    line: 1, timestamp: 5, inputLength: 20, outputLength: 3, hashIds: [], api: 'messages', model: 'm', stream: false, outcome: 'ok', maxTokens: 9,
    cachedInputTokens: 16, reasoningTokens: 1, ttftMs: 12.5, tpotMs: 3, e2eMs: 30, session: 's1',
  });
  assert.equal(b!.api, 'chat');
  assert.equal(c!.api, 'responses');
});

test('a malformed line names the file and its line number', () => {
  const bad = (line: string, why: RegExp) => {
    const text = `{"timestamp":0,"input_length":10,"output_length":1,"hash_ids":[]}\n\n${line}\n`;
    assert.throws(() => parseTrace(text, 'trace.jsonl'), (err: Error) => {
      assert.match(err.message, /^trace\.jsonl:3: /);
      assert.match(err.message, why);
      return true;
    });
  };
  bad('{"timestamp":0,"input_length":10', /not JSON/);
  bad('[1,2]', /one JSON object per line/);
  bad('{"input_length":10,"output_length":1,"hash_ids":[]}', /timestamp: missing/);
  bad('{"timestamp":-1,"input_length":10,"output_length":1}', /timestamp: expected milliseconds/);
  bad('{"timestamp":1,"input_length":0,"output_length":1}', /input_length: expected a whole number ≥ 1, got 0/);
  bad('{"timestamp":1,"input_length":10}', /output_length: missing/);
  bad('{"timestamp":1,"input_length":10,"output_length":1,"hash_ids":[1.5]}', /hash_ids: expected a list of whole numbers/);
  bad('{"timestamp":1,"input_length":10,"output_length":1,"hash_ids":[1,2]}', /2 hash_ids for input_length 10 at 512 tokens per block \(at most 1\)/);
  bad('{"timestamp":1,"input_length":10,"output_length":1,"api":"embeddings"}', /api: expected one of chat, completions, messages, responses/);
  bad('{"timestamp":1,"input_length":10,"output_length":1,"stream":"yes"}', /stream: expected true or false/);
  bad('{"timestamp":1,"text_input":"hello","output_length":1}', /prompts given as text/);
  assert.throws(() => parseTrace('\n\n', 'empty.jsonl'), /^Error: empty\.jsonl: no requests in the file/);
});

test('readTraceFile: a bad line is a ConfigError naming --replay (exit 2); a missing file an UnreadableFileError (exit 1)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-'));
  const path = join(dir, 't.jsonl');
  writeFileSync(path, '{"timestamp":0,"input_length":10,"output_length":1}\n{"timestamp":1,"input_length":"x","output_length":1}\n');
  assert.throws(() => readTraceFile(path), (err: Error) => err instanceof ConfigError && !(err instanceof UnreadableFileError) && err.message === `--replay: ${path}:2: input_length: expected a whole number ≥ 1, got "x"`);
  assert.throws(() => readTraceFile(join(dir, 'none.jsonl')), (err: Error) => err instanceof UnreadableFileError && /--replay: .*none\.jsonl: cannot read: ENOENT/.test(err.message));
});

test('the trace facts come from a header line or a sidecar; a header with another block size is refused', () => {
  const rows = '{"timestamp":0,"input_length":64,"output_length":1,"hash_ids":[7,8,9,10]}\n';
  const h = parseTrace(`{"block_size":16,"cut":"tokens","sampling":0.5,"start_time":"2026-01-02T03:04:05.000Z","version":"0.2.0"}\n${rows}`, 'h.jsonl');
  assert.deepEqual(h.meta, { blockSize: 16, from: 'header', cut: 'tokens', sampling: 0.5, startUnixMs: Date.parse('2026-01-02T03:04:05.000Z'), version: '0.2.0' });
  const nested = parseTrace(`{"infermeter_trace":{"block_size":16,"start_unix_ms":1000}}\n${rows}`, 'n.jsonl');
  assert.equal(nested.meta.blockSize, 16);
  assert.equal(nested.meta.startUnixMs, 1000);
  assert.throws(() => parseTrace(`{"block_size":16}\n${rows}{"block_size":32}\n`, 'x.jsonl'), /x\.jsonl:3: a header with another block size than line 1's/);
  assert.throws(() => parseTrace(rows, 'y.jsonl'), /y\.jsonl:1: 4 hash_ids for input_length 64 at 512 tokens per block/, 'without its header the ids do not fit Mooncake blocks');

  const dir = mkdtempSync(join(tmpdir(), 'trace-'));
  writeFileSync(join(dir, 'side.jsonl'), rows);
  writeFileSync(join(dir, 'side.jsonl.meta.json'), JSON.stringify({ block_size: 16, cut: 'characters', start_unix_ms: 5 }));
  const s = readTraceFile(join(dir, 'side.jsonl'));
  assert.deepEqual([s.meta.blockSize, s.meta.from, s.meta.cut, s.meta.startUnixMs], [16, 'sidecar', 'characters', 5]);
});

test('files interleave by their start times; --replay-speed divides the times; lines are sent in arrival order', () => {
  const a = parseTrace('{"block_size":512,"start_unix_ms":10000}\n{"timestamp":900,"input_length":5,"output_length":1}\n{"timestamp":100,"input_length":6,"output_length":1}\n', 'a.jsonl');
  const b = parseTrace('{"block_size":512,"start_unix_ms":10500}\n{"timestamp":0,"input_length":7,"output_length":1}\n', 'b.jsonl');
  const w = buildWorkload([a, b], 1, new Map());
  assert.deepEqual(w.requests.map((r) => [r.file, r.record.inputLength, r.atMs]), [[0, 6, 0], [1, 7, 400], [0, 5, 800]]);
  assert.equal(w.recordedSpanMs, 800);
  assert.deepEqual(w.requests.map((r) => r.namespace), [0, 1, 0], 'hash ids are compared within their own file');
  assert.deepEqual(buildWorkload([a, b], 2, new Map()).requests.map((r) => r.atMs), [0, 200, 400]);
  assert.deepEqual(buildWorkload([a, b], 0.5, new Map()).requests.map((r) => r.atMs), [0, 800, 1600]);
  const c = parseTrace('{"timestamp":50,"input_length":8,"output_length":1}\n', 'c.jsonl');
  const wc = buildWorkload([a, c], 1, new Map());
  assert.match(wc.notes[0]!, /no start time in c\.jsonl: taken to start with the earliest file that has one/);
});

test('--replay-model maps recorded models (and * every one); unserved models are found before anything is sent', () => {
  const f = parseTrace('{"timestamp":0,"input_length":5,"output_length":1,"model":"big"}\n{"timestamp":1,"input_length":5,"output_length":1,"model":"small"}\n{"timestamp":2,"input_length":5,"output_length":1}\n', 'm.jsonl');
  const map = parseModelMap(['big=served-a']);
  const w = buildWorkload([f], 1, map);
  assert.deepEqual(w.requests.map((r) => r.model), ['served-a', 'small', null]);
  assert.match(w.notes.join(), /not mapped by --replay-model, sent as recorded: small/);
  assert.deepEqual(unservedModels(w, ['served-a']), ['small']);
  assert.deepEqual(unservedModels(w, []), [], 'a target that lists no model is not second-guessed');
  assert.deepEqual(buildWorkload([f], 1, parseModelMap(['*=x', 'big=y'])).requests.map((r) => r.model), ['y', 'x', 'x']);
  assert.throws(() => parseModelMap(['big']), /expected FROM=TO/);
  assert.throws(() => parseModelMap(['a=b', 'a=c']), /a is mapped twice/);
});
