/**
 * The seed's case study as a scripted run: a simulator shaped like a 7B model on one A100
 * (the simulator's defaults) serving at 10 req/s, first with a conservative
 * --max-num-seqs 8 and no prefix caching, then with --max-num-seqs 512 and prefix caching,
 * each measured by the real `infermeter bench` CLI. The prompts share a long system prompt,
 * as chat traffic does. Prints each report's Analysis: the first names the limit, the second
 * shows it relieved.
 *   npm run bench:case-study            (CASE_STUDY_DURATION=20s, CASE_STUDY_QPS=10)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSimulator } from '../src/sim/child.js';
import type { BenchReport } from '../src/bench/report.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

export interface CaseStudyOptions {
  out: string;
  qps: number;
  duration: string;
  outputTokens: number;
  /** The simulator's --speed (default 1): at 2 every simulated time halves, so twice the rate holds the same shape in half the time (the suite's short run). */
  speed?: number;
}

export interface CaseRun {
  name: string;
  simFlags: string[];
  report: BenchReport;
  markdown: string;
}

export const CASE_RUNS = [
  { name: 'before', simFlags: ['--max-num-seqs', '8', '--prefix-caching', 'false'] },
  { name: 'after', simFlags: ['--max-num-seqs', '512', '--prefix-caching', 'true'] },
] as const;

/** A 600-token system prompt every request shares, then a question of its own. */
function promptsFile(path: string): void {
  const system = 'You are a support assistant for an inference platform. Answer briefly and cite the runbook section. '.repeat(24);
  const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ prompt: `${system}\nQuestion ${i}: why is request ${i} slow?` }));
  writeFileSync(path, lines.join('\n') + '\n');
}

function bench(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'bench', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`infermeter bench exited ${code}: ${stderr}`))));
  });
}

export async function runCaseStudy(o: CaseStudyOptions): Promise<CaseRun[]> {
  mkdirSync(o.out, { recursive: true });
  const prompts = join(o.out, 'prompts.jsonl');
  promptsFile(prompts);
  const runs: CaseRun[] = [];
  for (const run of CASE_RUNS) {
    const sim = await spawnSimulator(['--listen', '127.0.0.1:0', ...run.simFlags, ...(o.speed ? ['--speed', String(o.speed)] : [])]);
    const dir = join(o.out, run.name);
    try {
      await bench([
        '--target', sim.url, '--qps', String(o.qps), '--duration', o.duration, '--warmup', '2', '--requests', '3',
        '--output-tokens', String(o.outputTokens), '--prompts', prompts, '--nvidia-smi', 'none', '--sample-interval', '0.5s', '--out', dir,
      ]);
    } finally {
      await sim.close();
    }
    runs.push({ name: run.name, simFlags: [...run.simFlags], report: JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8')) as BenchReport, markdown: readFileSync(join(dir, 'bench.md'), 'utf8') });
  }
  return runs;
}

/** The report's Analysis section. */
export function analysisOf(markdown: string): string {
  const at = markdown.indexOf('## Analysis');
  if (at < 0) return '';
  const next = markdown.indexOf('\n## ', at + 3);
  const end = markdown.indexOf('\nPercentiles:', at);
  return markdown.slice(at, [next, end].filter((i) => i > 0).reduce((a, b) => Math.min(a, b), markdown.length)).trim();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.env['CASE_STUDY_OUT'] ?? 'case-study';
  const runs = await runCaseStudy({ out, qps: Number(process.env['CASE_STUDY_QPS'] ?? 10), duration: process.env['CASE_STUDY_DURATION'] ?? '20s', outputTokens: 64 });
  for (const r of runs) {
    console.log(`### ${r.name}: simulate ${r.simFlags.join(' ')}\n`);
    console.log(analysisOf(r.markdown), '\n');
  }
  console.log(`reports: ${out}/before, ${out}/after`);
}
