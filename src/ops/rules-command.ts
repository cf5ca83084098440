/** `infermeter rules`: prints the Prometheus rules generated from a config file's `slos:`. */
import { Command, InvalidArgumentError, Option } from 'commander';
import { loadConfigFile } from '../config.js';
import type { SloConfig } from '../slo/config.js';
import { generateRules, renderRules, RULE_FORMATS, type RuleFormat } from './rules.js';

/**
 * The file is validated whole, with the schema `serve` uses: a file that serve would refuse
 * (say, a Prometheus rule file given by mistake) stops here with the same message.
 */
export function readSloConfig(path: string): SloConfig {
  return loadConfigFile(path).slos;
}

export function rulesCommand(): Command {
  return new Command('rules')
    .description('print Prometheus recording and alerting rules (SLO burn rates, latency, operations) for a config file')
    .addOption(new Option('--config <file>', 'YAML config file whose slos: section the rules follow').env('INFERMETER_CONFIG').makeOptionMandatory())
    .addOption(new Option('--format <format>', 'prometheus (a rule file) or prometheusrule (a Kubernetes manifest)').choices(RULE_FORMATS).default('prometheus'))
    .option('--job <name>', 'scrape job name of infermeter\'s metrics listener (for the up{job=...} alerts)', 'infermeter')
    .option('--test-windows', 'divide every window and for: by 60 (1h -> 1m), for end-to-end tests and demos')
    .addOption(new Option('--load-ratio-alert <fraction>', 'InfermeterLoadNearCapacity fires when a model\'s infermeter_load_ratio stays above this').default('0.8').argParser(loadRatioFlag))
    .action((opts: { config: string; format: RuleFormat; job: string; testWindows?: boolean; loadRatioAlert: string | number }) => {
      const loadRatioAlert = Number(opts.loadRatioAlert);
      const groups = generateRules(readSloConfig(opts.config), { job: opts.job, testWindows: opts.testWindows === true, loadRatioAlert });
      process.stdout.write(renderRules(groups, { format: opts.format, generatedBy: commandLine({ ...opts, loadRatioAlert }) }));
    });
}

/** --load-ratio-alert: a fraction above 0 (1 and above fire only past the estimated break). */
function loadRatioFlag(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 10) throw new InvalidArgumentError(`expected a fraction such as 0.8 (above 0, at most 10), got "${v}"`);
  return n;
}

/** The command line that reproduces this output, for the file's header comment. */
export function commandLine(opts: { config: string; format: RuleFormat; job: string; testWindows?: boolean; loadRatioAlert?: number }): string {
  const parts = ['infermeter rules', `--config ${opts.config}`];
  if (opts.format !== 'prometheus') parts.push(`--format ${opts.format}`);
  if (opts.job !== 'infermeter') parts.push(`--job ${opts.job}`);
  if (opts.loadRatioAlert !== undefined && opts.loadRatioAlert !== 0.8) parts.push(`--load-ratio-alert ${opts.loadRatioAlert}`);
  if (opts.testWindows) parts.push('--test-windows');
  return parts.join(' ');
}
