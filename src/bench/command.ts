/**
 * `infermeter bench`: the standard inference benchmark as one command (docs/bench.md), and
 * `infermeter bench compare A B`. Ctrl-C writes what was measured, marked partial, and
 * exits 130; a second Ctrl-C exits at once.
 */
import { basename } from 'node:path';
import { Command, Option } from 'commander';
import { markRequired } from '../lib/cli-help.js';
import { DEFAULT_QPS, resolveBenchOptions, type BenchFlags } from './options.js';
import { createProgress } from './progress.js';
import { runBench } from './run.js';
import { readReport, writeReport } from './write.js';
import { renderMarkdown } from './markdown.js';
import { renderCompare } from './compare.js';
import { failedPhases, verdictLines } from './verdict.js';

export function benchCommand(): Command {
  const bench = new Command('bench')
    .description('benchmark an OpenAI-compatible inference server: single-stream, then load steps; JSON, Markdown and HTML report')
    .addOption(markRequired(new Option('--target <url>', 'inference server base URL, e.g. http://127.0.0.1:8000')))
    .option('--model <name>', 'model to ask for (default: the first of /v1/models)')
    .option('--api <api>', 'the generation API to benchmark: chat (/v1/chat/completions), completions (/v1/completions, as vllm bench serve; the default), messages (/v1/messages, Anthropic), responses (/v1/responses, OpenAI Responses)')
    .option('--route <route>', 'older name of --api: completion or chat', 'completion')
    .option('--input-tokens <n>', 'prompt length in tokens (built-in corpus, ~4 characters per token)', '512')
    .option('--output-tokens <n>', 'output length: max_tokens, with ignore_eos where the engine takes it', '128')
    .option('--prompts <file>', 'prompts from a file instead: one per line, or JSONL with "prompt" or "text"')
    .option('--warmup <n>', 'warm-up requests, not counted', '20')
    .option('--requests <n>', 'single-stream requests (one at a time); 0 skips', '100')
    .option('--qps <list>', `request rates of the load steps, req/s ("none" for none; default ${DEFAULT_QPS} unless --concurrency is given)`)
    .option('--concurrency <list>', 'concurrency levels of closed-loop load steps')
    .option('--duration <duration>', 'length of each load step', '60s')
    .option('--arrivals <kind>', 'poisson or constant inter-arrival times', 'poisson')
    .option('--seed <n>', 'seed for prompts and arrival times', '42')
    .option('--slo <list>', 'SLO thresholds for goodput, e.g. ttft=500ms,tpot=50ms,e2e=3s')
    .addOption(new Option('--config <file>', 'infermeter config file (validated as serve validates it); its slos.default thresholds are the goodput SLOs unless --slo is given').env('INFERMETER_CONFIG'))
    .option('--out <dir>', 'report directory (default bench-<date>)')
    .option('--nvidia-smi <path>', 'nvidia-smi binary ("none": no GPU sampling; absent: recorded as absent)', 'nvidia-smi')
    .option('--engine-metrics <url>', 'engine /metrics to sample KV cache and queue from (default TARGET/metrics; "none")')
    .option('--infermeter-metrics <url>', 'when --target is infermeter\'s proxy: its metrics listener (e.g. http://127.0.0.1:9464), where engine state is read from its infermeter_engine_* series instead of through the proxy port')
    .option('--engine <kind>', 'engine kind for the metric names (default: detected from /metrics)')
    .option('--sample-interval <duration>', 'GPU and engine sampling interval', '1s')
    .option('--gpu-hour-cost <price>', 'what one GPU costs per hour, in --currency: each step\'s cost per million output tokens counts its GPU time (default: --config\'s, else none)')
    .option('--energy-price <price>', 'what one kWh of GPU energy costs, in --currency (default: --config\'s, else none)')
    .option('--currency <code>', 'what the prices are in (default: --config\'s, else USD)')
    .option('--max-error-rate <ratio>', 'exit 1 when a measured phase\'s share of failed requests is above this (0 to 1); default: only a phase with no successful request fails')
    .option('--replay <files...>', 'replay workload traces (recorded by --workload-trace, or Mooncake JSONL) at their recorded times instead of the single-stream and load steps; several files interleave by their start times; lines that record no API use --api (default chat)')
    .option('--replay-speed <x>', 'divide the recorded times by x: 2 replays twice as fast, 0.5 at half speed', '1')
    .option('--replay-model <from=to>', 'ask the target for model TO where the trace recorded FROM (repeatable; *=TO maps every model)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--replay-calibrate <bool>', 'measure the target\'s token count of the replay\'s text per API and model first (two 1-token requests per pair); false: a token per word, no template', 'true')
    .action(async (f: BenchFlags) => runBenchCommand(f));
  bench
    .command('compare <a> <b>')
    .description('before/after table of two bench reports (bench.json or its directory) with deltas')
    .action((a: string, b: string) => {
      process.stdout.write(renderCompare(readReport(a), readReport(b), [label(a), label(b)]));
    });
  return bench;
}

function label(path: string): string {
  return basename(path.replace(/\/bench\.json$/, '').replace(/\/+$/, ''));
}

async function runBenchCommand(f: BenchFlags): Promise<void> {
  const opts = resolveBenchOptions(f, ['infermeter', ...process.argv.slice(2)]);
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\ninterrupted: writing a partial report (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const report = await runBench(opts, { progress: createProgress(), signal: controller.signal });
  process.off('SIGINT', onSigint);
  const paths = writeReport(opts.out, report);
  process.stdout.write(renderMarkdown(report) + '\n');
  process.stderr.write(`report: ${paths.json}\n        ${paths.markdown}\n        ${paths.html}\n`);
  if (report.partial) process.exit(130);
  const failed = failedPhases(report, opts.maxErrorRate);
  if (failed.length > 0) {
    process.stderr.write(verdictLines(failed, opts.maxErrorRate).join('\n') + '\n');
    process.exit(1);
  }
}
