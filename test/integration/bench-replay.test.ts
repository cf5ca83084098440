/**
 * `infermeter bench --replay` against the simulator, through real sockets: a Mooncake file
 * written by hand replays with its recorded lengths and its prefix structure (the simulator's
 * prefix-cache hits follow the shared hash ids), the report sets the recorded run beside the
 * replayed one and validates; --replay-speed scales the arrival span, --replay-model maps
 * models, every API and non-streamed lines replay; a malformed line stops the bench naming
 * the file and line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../../src/sim/index.js';
import { runBench } from '../../src/bench/run.js';
import { resolveBenchOptions, type BenchFlags } from '../../src/bench/options.js';
import type { BenchReport } from '../../src/bench/report.js';
import { renderMarkdown } from '../../src/bench/markdown.js';
import { ConfigError } from '../../src/lib/errors.js';
import { CLI } from '../fakes/infermeter-process.js';
import { reportValidator } from '../unit/bench/fixture.js';
import { ROOT } from '../helpers.js';

const HAND = `${ROOT}test/fixtures/mooncake-hand-written-synthetic.jsonl`;
const AIPERF = `${ROOT}test/fixtures/mooncake-aiperf-docs-example.jsonl`;

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function tmp(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'replay-')), name);
  writeFileSync(path, text);
  return path;
}

/** runBench on traces, as the command line resolves its flags. */
async function replay(target: string, files: string[], over: Partial<BenchFlags> = {}): Promise<BenchReport> {
  const flags: BenchFlags = {
    target, route: 'completion', inputTokens: '512', outputTokens: '128', warmup: '0', requests: '0', duration: '60s', arrivals: 'poisson', seed: '1',
    nvidiaSmi: 'none', sampleInterval: '200ms', replay: files, ...over,
  };
  return runBench(resolveBenchOptions(flags, ['test']));
}

test('a hand-written Mooncake file replays: recorded lengths, shared prefixes hit the simulator\'s prefix cache, the report validates', { timeout: 90_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 4, prefillTps: 0, stepPerSeqMs: 0 });
  const out = mkdtempSync(join(tmpdir(), 'replay-out-'));
  try {
    const r = await cli(['bench', '--target', sim.url, '--replay', HAND, '--replay-speed', '2', '--warmup', '2', '--nvidia-smi', 'none', '--slo', 'ttft=2s', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as BenchReport;
    const validate = reportValidator();
    assert.ok(validate(report), JSON.stringify(validate.errors));
    assert.equal(report.singleStream, null);
    assert.equal(report.steps.length, 1);
    const step = report.steps[0]!;
    assert.equal(step.mode, 'replay');
    assert.equal(step.summary.ok, 8);
    const rp = report.replay!;
    assert.equal(rp.speed, 2);
    assert.equal(rp.files[0]!.blockSize, 512);
    assert.equal(rp.calibration![0]!.api, 'chat');
    assert.equal(rp.calibration![0]!.tokensPerWord, 1, 'the simulator counts a token per four-character word');
    assert.equal(rp.inputLength.exact, 8, `every prompt as long as recorded: ${JSON.stringify(rp.inputLength)}`);
    assert.equal(rp.outputLength.exact, 8, 'max_tokens with ignore_eos: every reply as long as recorded');
    assert.deepEqual(step.requests.map((s) => s.promptTokens), [1100, 1300, 700, 1536, 900, 400, 1050, 600]);
    // Four requests share two blocks, two share one: 3584 of 7586 prompt tokens an unbounded cache reuses.
    const unbounded = rp.reuse.find((x) => x.model === 'unbounded')!;
    assert.equal(unbounded.hitTokens, 3584);
    // The simulator reports its cache (vllm:cache_config_info: 7,000 blocks of 16): a cache of its size holds the whole trace.
    const sized = rp.reuse.find((x) => x.model === 'engine size')!;
    assert.equal(sized.hitTokens, 3584);
    assert.match(sized.description, /^7,000 blocks of 16 tokens \(218 of the trace's 512\)/);
    const hits = rp.replayed.prefixCacheHitRatio!;
    assert.ok(Math.abs(hits - 3584 / 7586) < 0.02, `the engine found ${hits} of prompt tokens cached; the trace allows ${3584 / 7586}`);
    assert.equal(sim.state().prefixHitTokens, 3584, 'the simulator\'s own count: exactly the shared blocks');
    assert.equal(rp.recorded.arrivalRate, 7 / 1.8);
    assert.ok(Math.abs(rp.replayed.arrivalRate! - 2 * 7 / 1.8) / (2 * 7 / 1.8) < 0.15, `replayed arrivals ${rp.replayed.arrivalRate} req/s at ×2`);
    assert.equal(rp.replayed.slo.ttft!.judged, 8);
    assert.equal(rp.recorded.slo.ttft, undefined, 'a Mooncake file has no latencies to judge');
    const md = readFileSync(join(out, 'bench.md'), 'utf8');
    assert.match(md, /## Replay: recorded beside replayed \(×2\)/);
    assert.match(md, /\| input tokens P50 \/ P95 \/ P99 \| (\d+ \/ \d+ \/ \d+) \| \1 \|/);
    assert.match(md, /Input length against the recorded one: 8 of 8 exact/);
    assert.match(md, /\| a cache of the target engine's size over the same hash ids \| 47\.2% \| 47\.2% \|/);
    const html = readFileSync(join(out, 'bench.html'), 'utf8');
    assert.match(html, /Replay: recorded beside replayed/);
    assert.match(html, /aria-label="Replay: arrivals over time"/);

    const stats = await cli(['trace', 'stats', HAND, '--json']);
    assert.equal(stats.code, 0, stats.stderr);
    assert.equal((JSON.parse(stats.stdout) as { reuse: { hitTokens: number }[] }).reuse[0]!.hitTokens, 3584);
    // A cache of the engine's size beside it: one that holds everything reuses what the unbounded one does, a small one less.
    const reuseAt = async (blocks: string) => {
      const r = await cli(['trace', 'stats', HAND, '--json', '--cache-blocks', blocks]);
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { reuse: { model: string; hitTokens: number }[] }).reuse.map((x) => [x.model, x.hitTokens]);
    };
    assert.deepEqual(await reuseAt('1000000'), [['unbounded', 3584], ['engine size', 3584]]);
    const small = await reuseAt('64');
    assert.ok((small[1]![1] as number) < 3584, JSON.stringify(small));
    const bad = await cli(['trace', 'stats', HAND, '--cache-blocks', '1']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--cache-blocks: 1 blocks of 16 tokens hold less than one of the trace's 512-token blocks/);
  } finally {
    await sim.close();
  }
});

test('trace stats without --cache-blocks models each engine at the size its sidecar recorded, fed the requests that upstream served', { timeout: 60_000 }, async () => {
  // HAND's requests whose prompts start with block 1 went to a, the others to b.
  const lines = readFileSync(HAND, 'utf8').trim().split('\n').map((l) => {
    const o = JSON.parse(l) as { hash_ids: number[] };
    return JSON.stringify({ ...o, upstream: o.hash_ids[0] === 1 ? 'a' : 'b' });
  });
  const file = tmp('routed.jsonl', lines.join('\n') + '\n');
  const engines = {
    a: { engine: 'vllm', block_size: 16, cache_tokens: 1_000_000, prefix_caching: true },
    b: { engine: 'vllm', block_size: 16, cache_tokens: 1_000_000, prefix_caching: true },
    c: { engine: 'sglang', block_size: null, cache_tokens: null, prefix_caching: null },
  };
  const sidecar = (e: unknown) => writeFileSync(`${file}.meta.json`, JSON.stringify({ format: 'infermeter-workload-trace', format_version: 1, block_size: 512, engines: e }));
  const rows = async (...extra: string[]) => {
    const r = await cli(['trace', 'stats', file, '--json', ...extra]);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { reuse: { model: string; hitTokens: number; promptTokens: number }[] }).reuse.map((x) => [x.model, x.hitTokens, x.promptTokens]);
  };
  sidecar(engines);
  // a: requests 1, 3 and 6 each find blocks 1 and 2 (1,024 tokens) of 4,986; b: request 4 finds block 10 (512) of 2,600. c reported no size: no row.
  assert.deepEqual(await rows(), [['unbounded', 3584, 7586], ['engine size (a)', 3072, 4986], ['engine size (b)', 512, 2600]]);
  const md = await cli(['trace', 'stats', file]);
  assert.match(md.stdout, /engine size \(a\)[^\n]*a's requests through 62,500 blocks of 16 tokens \(1,953 of the trace's 512; vllm's size, from the sidecar\)/);
  // --cache-blocks is the operator's word: one row for every request, the sidecar's sizes unused.
  assert.deepEqual(await rows('--cache-blocks', '1000000'), [['unbounded', 3584, 7586], ['engine size', 3584, 7586]]);
  // A cache of one of the trace's blocks on a (32 blocks of 16 tokens): blocks are freed tail first, so the head, block 1, stays: 512 tokens for each of requests 1, 3 and 6.
  sidecar({ a: { ...engines.a, cache_tokens: 512 } });
  assert.deepEqual(await rows(), [['unbounded', 3584, 7586], ['engine size (a)', 1536, 4986]]);
  sidecar({ a: { ...engines.a, cache_tokens: 'lots' } });
  const bad = await cli(['trace', 'stats', file]);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /routed\.jsonl\.meta\.json: engines\.a\.cache_tokens: expected a whole number ≥ 1 or null, got "lots"/);
});

test('the prefix-cache hits follow the hash ids: the same lengths with no id shared find nothing cached', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 4, prefillTps: 0, stepPerSeqMs: 0 });
  try {
    const lines = readFileSync(HAND, 'utf8').trim().split('\n').map((l, i) => {
      const o = JSON.parse(l) as { hash_ids: number[] };
      return JSON.stringify({ ...o, hash_ids: o.hash_ids.map((h) => h + 1000 * (i + 1)) });
    });
    const report = await replay(sim.url, [tmp('unique.jsonl', lines.join('\n') + '\n')], { replaySpeed: '4' });
    assert.equal(report.steps[0]!.summary.ok, 8);
    assert.equal(report.replay!.reuse[0]!.hitTokens, 0);
    assert.equal(sim.state().prefixHitTokens, 0);
    assert.equal(report.replay!.replayed.prefixCacheHitRatio, 0);
  } finally {
    await sim.close();
  }
});

test('a second replay with the same --seed finds its text cached (and the report says so); another seed replays fresh text', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0, stepPerSeqMs: 0 });
  try {
    const expected = 3584 / 7586;
    const first = await replay(sim.url, [HAND], { replaySpeed: '4' });
    assert.ok(Math.abs(first.replay!.replayed.prefixCacheHitRatio! - expected) < 0.02);
    assert.doesNotMatch(renderMarkdown(first), /Warning/);
    const again = await replay(sim.url, [HAND], { replaySpeed: '4' });
    assert.ok(again.replay!.replayed.prefixCacheHitRatio! > 0.9, `the same text again: ${again.replay!.replayed.prefixCacheHitRatio}`);
    assert.match(renderMarkdown(again), /\*\*Warning\*\*: the engine found 9\d\.\d% of prompt tokens cached, more than the trace's own prefixes allow/);
    const fresh = await replay(sim.url, [HAND], { replaySpeed: '4', seed: '43' });
    assert.ok(Math.abs(fresh.replay!.replayed.prefixCacheHitRatio! - expected) < 0.02, `another seed: ${fresh.replay!.replayed.prefixCacheHitRatio}`);
  } finally {
    await sim.close();
  }
});

test('cached prompt tokens, recorded and replayed, are set side by side request by request', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0, stepPerSeqMs: 0, promptTokensDetails: 'true' });
  const trace = tmp('cached.jsonl', [
    { timestamp: 0, input_length: 1100, output_length: 2, hash_ids: [1, 2, 3], cached_input_tokens: 0 },
    { timestamp: 200, input_length: 1300, output_length: 2, hash_ids: [1, 2, 4], cached_input_tokens: 1024 },
    // A recording's hit that the ids do not carry (a prefix shorter than a block): the replay cannot find it.
    { timestamp: 400, input_length: 600, output_length: 2, hash_ids: [5, 6], cached_input_tokens: 256 },
    { timestamp: 600, input_length: 600, output_length: 2, hash_ids: [7, 8] },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n');
  try {
    const report = await replay(sim.url, [trace], { replaySpeed: '4' });
    const c = report.replay!.cachedTokens;
    assert.deepEqual([c.compared, c.promptTokens, c.recorded], [3, 3000, 1280], 'the line without cached_input_tokens is left out');
    assert.deepEqual(report.steps[0]!.requests.map((s) => s.replay!.cachedTokens), [0, 1024, 0, 0], 'the second request finds its two shared blocks');
    assert.equal(c.replayed, 1024);
    assert.equal(c.exact, 2);
    assert.ok(reportValidator()(report));
    assert.match(renderMarkdown(report), /Cached prompt tokens of the 3 requests whose usage reports them in both runs: recorded 1280 \(42\.7%\), replayed 1024 \(34\.1%\); 2 of 3 requests exactly as recorded\./);
  } finally {
    await sim.close();
  }
});

test('--replay-speed 2 halves the arrival span, 0.5 doubles it', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0 });
  const trace = tmp('speed.jsonl', [0, 300, 600, 900, 1200].map((t) => JSON.stringify({ timestamp: t, input_length: 40, output_length: 2, hash_ids: [] })).join('\n') + '\n');
  try {
    const span = async (speed: string) => {
      const s = (await replay(sim.url, [trace], { replaySpeed: speed })).steps[0]!.requests.map((x) => x.start);
      return Math.max(...s) - Math.min(...s);
    };
    const [half, one, twice] = [await span('2'), await span('1'), await span('0.5')];
    assert.ok(Math.abs(one - 1.2) < 0.1, `×1: ${one} s`);
    assert.ok(Math.abs(half - 0.6) < 0.1, `×2: ${half} s`);
    assert.ok(Math.abs(twice - 2.4) < 0.1, `×0.5: ${twice} s`);
  } finally {
    await sim.close();
  }
});

test('--replay-model maps recorded models onto served ones; an unserved model stops the bench naming the flag', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0, models: 'served-a,served-b' });
  const trace = tmp('models.jsonl', [
    { timestamp: 0, input_length: 30, output_length: 2, model: 'prod-large' },
    { timestamp: 10, input_length: 30, output_length: 2, model: 'prod-small' },
    { timestamp: 20, input_length: 30, output_length: 2 },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n');
  try {
    const report = await replay(sim.url, [trace], { replayModel: ['prod-large=served-b', 'prod-small=served-a'] });
    assert.equal(report.steps[0]!.summary.ok, 3);
    assert.deepEqual(report.steps[0]!.requests.map((s) => s.replay!.model), ['served-b', 'served-a', null]);
    assert.deepEqual(report.replay!.models, { 'prod-large': 'served-b', 'prod-small': 'served-a' });
    await assert.rejects(replay(sim.url, [trace], { replayModel: ['prod-large=served-b'] }), (err: Error) =>
      err instanceof ConfigError && /--replay-model: the trace asks for prod-small, which .* does not serve \(it serves served-a, served-b\): map it, e\.g\. --replay-model prod-small=served-a/.test(err.message));
  } finally {
    await sim.close();
  }
});

test('every API, streamed or not, replays at its recorded length once the target\'s tokens are calibrated', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0 });
  const apis = ['chat', 'completions', 'messages', 'responses'];
  const trace = tmp('apis.jsonl', apis.flatMap((api, i) => [true, false].map((stream, j) =>
    JSON.stringify({ timestamp: i * 40 + j * 20, input_length: 600 + i * 37, output_length: 5, hash_ids: [1], api, stream }))).join('\n') + '\n');
  try {
    const report = await replay(sim.url, [trace], { replayCalibrate: 'true', engine: 'vllm' });
    const samples = report.steps[0]!.requests;
    assert.equal(report.steps[0]!.summary.ok, 8, JSON.stringify(samples.map((s) => s.error)));
    for (const s of samples) {
      assert.equal(s.promptTokens, s.replay!.inputLength, `${s.replay!.api} stream=${s.replay!.stream}: ${s.promptTokens} prompt tokens`);
      assert.equal(s.outputTokens, 5);
      assert.equal(s.ttft === null, !s.replay!.stream, 'no TTFT for a non-streamed reply, as the proxy times it');
    }
    assert.deepEqual(report.replay!.calibration!.map((c) => [c.api, c.overhead]).sort(), [['chat', 6], ['completions', 0], ['messages', 6], ['responses', 6]]);
    assert.ok(reportValidator()(report));
  } finally {
    await sim.close();
  }
});

test('a malformed line stops the bench before it starts, naming the file and line (exit 2); a plain AIPerf example replays', { timeout: 60_000 }, async () => {
  const bad = tmp('bad.jsonl', `${readFileSync(AIPERF, 'utf8')}{"timestamp": 30000, "input_length": 655, "output_length": 52, "hash_ids": [46, 47],}\n`);
  const r = await cli(['bench', '--target', 'http://127.0.0.1:1', '--replay', bad, '--out', join(tmpdir(), 'never')]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`^infermeter: invalid configuration: --replay: ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4: not JSON`));
  const both = await cli(['bench', '--target', 'http://127.0.0.1:1', '--replay', AIPERF, '--qps', '4']);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--qps: not with --replay/);

  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 1, prefillTps: 0 });
  try {
    const report = await replay(sim.url, [AIPERF], { replaySpeed: '40' });
    assert.equal(report.steps[0]!.summary.ok, 3);
    assert.deepEqual(report.steps[0]!.requests.map((s) => [s.replay!.api, s.promptTokens, s.outputTokens]), [['chat', 655, 52], ['chat', 672, 26], ['chat', 655, 52]]);
    const completions = await replay(sim.url, [AIPERF], { replaySpeed: '40', api: 'completions' });
    assert.deepEqual(completions.steps[0]!.requests.map((s) => [s.replay!.api, s.promptTokens]), [['completions', 655], ['completions', 672], ['completions', 655]], '--api sets the API of lines that record none');
  } finally {
    await sim.close();
  }
});
