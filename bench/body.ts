/**
 * npm run bench:body — what reading a generation request costs the proxy thread: the
 * top-level scan that bodies of SCAN_FROM_BYTES and more get, against decoding and parsing
 * the whole body (what every body got before), side by side on the same bodies. Prose,
 * code (an escaped quote every few bytes) and the worst case for the scan (escapes
 * everywhere), at three sizes. Medians of BENCH_ROUNDS (default 7) rounds, and ratios.
 */
import { SCAN_FROM_BYTES, readGenerationRequest, scanTopLevel } from '../src/proxy/body.js';
import { percentile, sorted } from './lib.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const TEXTS: Record<string, string> = {
  prose: 'The quick brown fox jumps over the lazy dog, again and again; ',
  code: 'if (x == "a") { print("b\\n"); } ',
  'escapes everywhere': 'lorem "q" \\ b \n ',
};
const SIZES = [SCAN_FROM_BYTES, 140 * 1024, 1024 * 1024];
const FIELDS = ['model', 'stream', 'stream_options'];

/** µs per call: the median over rounds of a loop of calls long enough to take ≥ 20 ms. */
function time(fn: () => void): number {
  let n = 1;
  for (let t = 0; t < 20; n *= 2) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    t = performance.now() - t0;
  }
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    rounds.push(((performance.now() - t0) / n) * 1000);
  }
  return percentile(sorted(rounds), 50);
}

console.log(`request body reading on the proxy thread, µs per body (median of ${ROUNDS} rounds)\n`);
console.log('content            | size      | scan    | JSON.parse | ratio  | whole readGenerationRequest (scan + include_usage splice)');
for (const [name, unit] of Object.entries(TEXTS)) {
  for (const size of SIZES) {
    const doc = { messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: '' }], model: 'bench-model', stream: true, max_tokens: 128 };
    const overhead = Buffer.byteLength(JSON.stringify(doc));
    let content = '';
    while (Buffer.byteLength(JSON.stringify(content)) < size - overhead) content += unit;
    doc.messages[1]!.content = content;
    const body = Buffer.from(JSON.stringify(doc));
    const scan = time(() => scanTopLevel(body, FIELDS));
    const parse = time(() => JSON.parse(body.toString('utf8')));
    const whole = time(() => readGenerationRequest(body, true));
    console.log(`${name.padEnd(18)} | ${(body.length / 1024).toFixed(0).padStart(5)} KiB | ${scan.toFixed(1).padStart(7)} | ${parse.toFixed(1).padStart(10)} | ${(parse / scan).toFixed(1).padStart(5)}× | ${whole.toFixed(1)}`);
  }
}
