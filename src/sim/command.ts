/** `infermeter simulate`: serves the simulator until SIGINT/SIGTERM. */
import { Command, Option } from 'commander';
import { startSimulator } from './index.js';
import { SIM_OPTIONS, type SimOptions } from './options.js';
import { cliValues } from '../lib/cli-help.js';

export function simulateCommand(): Command {
  const cmd = new Command('simulate').description(
    'run a simulated vLLM server: OpenAI API, vLLM /metrics, latency that grows with load like continuous batching',
  );
  for (const spec of SIM_OPTIONS) {
    const opt = new Option(spec.flag, spec.help).default(spec.default);
    opt.attributeName = () => spec.key;
    cmd.addOption(opt);
  }
  cmd.action(async (_values: unknown, self: Command) => {
    // Only what was typed: the defaults shown in help are the simulator's own (options.ts).
    const sim = await startSimulator(cliValues(self) as Partial<Record<keyof SimOptions, string>>);
    const o = sim.options;
    process.stderr.write(
      `infermeter simulate: serving ${o.models.join(', ')} at ${sim.url} ` +
        `(speed ${Number.isFinite(o.speed) ? o.speed : 'max'}, max-num-seqs ${o.maxNumSeqs}, kv ${o.kvCacheTokens} tokens, metrics ${o.metricsFormat})\n`,
    );
    const stop = () => void sim.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return cmd;
}
