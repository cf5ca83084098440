/**
 * Reading traces (src/bench/replay/trace.ts) and merging them into a workload
 * (src/bench/replay/workload.ts): Mooncake lines as recorded elsewhere, infermeter's fields,
 * the recorder's sidecar, and every bad line named by file and line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MOONCAKE_BLOCK_SIZE, parseTrace, readTraceFile } from '../../../src/bench/replay/trace.js';
import { SALTED, buildWorkload, parseModelMap, unservedModels } from '../../../src/bench/replay/workload.js';
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
    cachedInputTokens: 16, reasoningTokens: 1, ttftMs: 12.5, tpotMs: 3, e2eMs: 30, session: 's1', upstream: 'a',
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
  bad('{"timestamp":1,"input_length":-1,"output_length":1}', /input_length: expected a whole number ≥ 0, got -1/);
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
  assert.throws(() => readTraceFile(path), (err: Error) => err instanceof ConfigError && !(err instanceof UnreadableFileError) && err.message === `--replay: ${path}:2: input_length: expected a whole number ≥ 0, got "x"`);
  assert.throws(() => readTraceFile(join(dir, 'none.jsonl')), (err: Error) => err instanceof UnreadableFileError && /--replay: .*none\.jsonl: cannot read: ENOENT/.test(err.message));
});

/** A sidecar as the recorder writes it (docs/workload-trace.md). */
const side = (over: Record<string, unknown> = {}) => ({
  path: 'x.jsonl.meta.json',
  doc: {
    format: 'infermeter-workload-trace', format_version: 1, infermeter_version: '0.2.0', start_unix_ms: 1_000_000, start_time: new Date(1_000_000).toISOString(),
    block_size: 16, chars_per_token: 4, hash: 'sha256-53-salted', cut: { m: { cut: 'chars', tokenizer: null } }, sample: 1, requests: 4, lines: 2,
    skipped: { sampled: 0, busy: 2, unreadable: 0 }, kept_ratio: 0.5, first_timestamp: 0, last_timestamp: 9, closed: true, ...over,
  },
});

test('the trace facts come from its sidecar, FILE.meta.json (rotated files\' too); without one, Mooncake\'s 512-token blocks', () => {
  const rows = '{"timestamp":0,"input_length":64,"output_length":1,"hash_ids":[7,8,9,10]}\n';
  const f = parseTrace(rows, 'x.jsonl', side());
  assert.deepEqual(f.meta, { blockSize: 16, from: 'sidecar', cut: 'chars', sampling: 0.5, startUnixMs: 1_000_000, version: '0.2.0', saltedIds: true, engines: new Map() });
  // The engines' caches: only those whose block size and cache size are both known.
  const engines = { gpu0: { engine: 'vllm', block_size: 16, cache_tokens: 448_000, prefix_caching: true }, gpu1: { engine: 'sglang', block_size: 1, cache_tokens: null, prefix_caching: null } };
  assert.deepEqual([...parseTrace(rows, 'x.jsonl', side({ engines })).meta.engines], [['gpu0', { engine: 'vllm', blockSize: 16, cacheTokens: 448_000 }]]);
  assert.throws(() => parseTrace(rows, 'x.jsonl', side({ engines: [] })), /x\.jsonl\.meta\.json: engines: expected an object by upstream name, got \[\]/);
  assert.throws(() => parseTrace(rows, 'x.jsonl', side({ engines: { gpu0: { block_size: 1.5 } } })), /engines\.gpu0\.block_size: expected a whole number ≥ 1 or null, got 1\.5/);
  assert.equal(parseTrace(rows, 'x.jsonl', side({ cut: { a: { cut: 'tokens' }, b: { cut: 'chars' }, '': { cut: 'chars' } } })).meta.cut, 'tokens (a); chars (b, (no model))');
  assert.throws(() => parseTrace(rows, 'y.jsonl'), /y\.jsonl:1: 4 hash_ids for input_length 64 at 512 tokens per block/, 'without its sidecar the ids do not fit Mooncake blocks');
  assert.throws(() => parseTrace(rows, 'x.jsonl', side({ format_version: 2 })), /x\.jsonl\.meta\.json: format_version 2 is newer than this infermeter reads \(1\)/);
  assert.throws(() => parseTrace(rows, 'x.jsonl', side({ block_size: 0 })), /x\.jsonl\.meta\.json: block_size: expected a whole number of tokens ≥ 1, got 0/);

  const dir = mkdtempSync(join(tmpdir(), 'trace-'));
  for (const name of ['t.jsonl', 't.jsonl.1']) {
    writeFileSync(join(dir, name), rows);
    writeFileSync(join(dir, `${name}.meta.json`), JSON.stringify(side().doc));
    assert.equal(readTraceFile(join(dir, name)).meta.blockSize, 16, name);
  }
  writeFileSync(join(dir, 'broken.jsonl'), rows);
  writeFileSync(join(dir, 'broken.jsonl.meta.json'), '{"block_size": 16');
  assert.throws(() => readTraceFile(join(dir, 'broken.jsonl')), /--replay: .*broken\.jsonl\.meta\.json: not a JSON sidecar/);
});

test('a recorder\'s lines: "" for no model, 0 tokens for a request that failed before its prompt was counted', () => {
  const f = parseTrace('{"timestamp":3,"input_length":0,"output_length":0,"hash_ids":[],"input_length_source":"chars","model":"","api":"chat","stream":true,"outcome":"upstream_unreachable","upstream":null,"max_tokens":null,"cached_input_tokens":null,"reasoning_tokens":null,"ttft_ms":null,"tpot_ms":null,"e2e_ms":null,"session":null}\n', 'r.jsonl', side());
  assert.deepEqual([f.records[0]!.model, f.records[0]!.inputLength, f.records[0]!.outputLength, f.records[0]!.outcome], [null, 0, 0, 'upstream_unreachable']);
});

test('files interleave by their start times; --replay-speed divides the times; lines are sent in arrival order', () => {
  const a = parseTrace('{"timestamp":900,"input_length":5,"output_length":1,"hash_ids":[4]}\n{"timestamp":100,"input_length":6,"output_length":1}\n', 'a.jsonl', side({ start_unix_ms: 10_000, block_size: 512 }));
  const b = parseTrace('{"timestamp":0,"input_length":7,"output_length":1,"hash_ids":[4]}\n', 'b.jsonl', side({ start_unix_ms: 10_500, block_size: 512 }));
  const w = buildWorkload([a, b], 1, new Map());
  assert.deepEqual(w.requests.map((r) => [r.file, r.record.inputLength, r.atMs]), [[0, 6, 0], [1, 7, 400], [0, 5, 800]]);
  assert.equal(w.recordedSpanMs, 800);
  assert.deepEqual(w.requests.map((r) => r.namespace), [SALTED, SALTED, SALTED], 'salted ids mean one prefix in every file');
  assert.deepEqual(buildWorkload([a, b], 2, new Map()).requests.map((r) => r.atMs), [0, 200, 400]);
  assert.deepEqual(buildWorkload([a, b], 0.5, new Map()).requests.map((r) => r.atMs), [0, 800, 1600]);
  const c = parseTrace('{"timestamp":50,"input_length":8,"output_length":1,"hash_ids":[4]}\n', 'c.jsonl');
  const wc = buildWorkload([a, c], 1, new Map());
  assert.match(wc.notes[0]!, /no start time in c\.jsonl: taken to start with the earliest file that has one/);
  assert.deepEqual(wc.requests.map((r) => [r.file, r.namespace]), [[1, 1], [0, SALTED], [0, SALTED]], 'a plain Mooncake file\'s ids are its own');
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
