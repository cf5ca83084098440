/**
 * `npm test`: the whole suite on the built tree, in two passes, then the ten slowest files.
 *
 *  1. shared: every unit, integration and fault file that shares nothing with another, run
 *     `--concurrency` files at a time, 3 unless told (each in its own process: node's test runner isolates files;
 *     most of these files wait on sockets and timers, so on 2 cores three at a time beat two by ~11 %);
 *  2. alone: the files whose claims are about time or CPU (latency accuracy, knees, rates, memory
 *     under load), one at a time with nothing else running. A file joins this pass with a line
 *     `// test-group: alone (why)` in its source.
 *
 * Ends with the ten slowest files (their tests' time added up) and the plain line
 * `N passed, N failed, N skipped`; exits 1 when a test failed. `--unit` runs test/unit only (one
 * pass, all at once). Arguments that are not flags narrow the run to files whose path contains one.
 *
 *   node dist/scripts/test.js [--unit] [--concurrency N] [part-of-path ...]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';

const ALONE = /^\/\/ test-group: alone\b/m;
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dist = join(root, 'dist', 'test');

interface FileStat {
  ms: number;
  tests: number;
}
interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  files: Map<string, FileStat>;
  failures: string[];
}

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    // Only files whose source is still there: a test deleted from test/ leaves its compiled copy in dist/.
    else if (name.endsWith('.test.js') && existsSync(join(root, relative(join(root, 'dist'), path)).replace(/\.js$/, '.ts'))) out.push(path);
  }
  return out;
}

function parseArgs(argv: string[]): { unit: boolean; concurrency: number; filters: string[] } {
  let unit = false;
  let concurrency = Number(process.env.INFERMETER_TEST_CONCURRENCY ?? 3);
  const filters: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--unit') unit = true;
    else if (arg === '--concurrency') concurrency = Number(argv[++i]);
    else if (arg.startsWith('--')) throw new Error(`test: unknown flag ${arg}`);
    else filters.push(arg);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`test: --concurrency (or INFERMETER_TEST_CONCURRENCY) must be a whole number ≥ 1, got ${concurrency}`);
  }
  return { unit, concurrency, filters };
}

async function pass(label: string, files: string[], concurrency: number, tally: Tally): Promise<void> {
  if (files.length === 0) return;
  const started = Date.now();
  process.stdout.write(`\n== ${label}: ${files.length} files, ${concurrency} at a time\n`);
  const stream = run({ files, concurrency });
  stream.on('test:pass', (data) => count(data, false, tally));
  stream.on('test:fail', (data) => count(data, true, tally));
  await new Promise<void>((done, fail) => {
    const out = stream.compose(spec);
    out.on('data', (chunk: string | Buffer) => process.stdout.write(chunk));
    out.on('end', done);
    out.on('error', fail);
  });
  process.stdout.write(`== ${label}: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

interface TestEvent {
  name: string;
  nesting: number;
  file?: string;
  skip?: string | boolean;
  todo?: string | boolean;
  details: { duration_ms: number; type?: 'suite' | 'test' };
}

function count(data: TestEvent, failed: boolean, tally: Tally): void {
  const file = data.file ? relative(root, data.file) : '(unknown file)';
  if (data.nesting === 0) {
    const stat = tally.files.get(file) ?? { ms: 0, tests: 0 };
    stat.ms += data.details.duration_ms;
    tally.files.set(file, stat);
  }
  if (data.details.type === 'suite') return;
  const stat = tally.files.get(file);
  if (stat) stat.tests++;
  if (data.skip || data.todo) tally.skipped++;
  else if (failed) {
    tally.failed++;
    tally.failures.push(`${file}: ${data.name}`);
  } else tally.passed++;
}

async function main(): Promise<void> {
  const { unit, concurrency, filters } = parseArgs(process.argv.slice(2));
  const dirs = unit ? ['unit'] : ['unit', 'integration', 'faults'];
  const all = dirs
    .flatMap((d) => testFiles(join(dist, d)))
    .filter((f) => filters.length === 0 || filters.some((part) => f.includes(part)));
  if (all.length === 0) throw new Error(`test: no test file matches ${filters.join(' ')}`);
  const alone = all.filter((f) => ALONE.test(readFileSync(f, 'utf8')));
  const shared = all.filter((f) => !alone.includes(f));
  const tally: Tally = { passed: 0, failed: 0, skipped: 0, files: new Map(), failures: [] };
  const started = Date.now();
  await pass(unit ? 'unit' : 'shared', shared, unit ? availableParallelism() : concurrency, tally);
  await pass('alone', alone, 1, tally);

  const slowest = [...tally.files.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 10);
  process.stdout.write(`\n== the ten slowest files (their tests' time; the whole run took ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  for (const [file, stat] of slowest) {
    process.stdout.write(`${(stat.ms / 1000).toFixed(1).padStart(7)} s  ${String(stat.tests).padStart(4)} tests  ${file.replace(/^dist\//, '').replace(/\.js$/, '.ts')}\n`);
  }
  if (tally.failures.length > 0) {
    process.stdout.write(`\n== failed\n${tally.failures.map((f) => `  ${f}`).join('\n')}\n`);
  }
  process.stdout.write(`\n${tally.passed} passed, ${tally.failed} failed, ${tally.skipped} skipped\n`);
  if (tally.failed > 0 || tally.passed === 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
});
