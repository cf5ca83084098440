/**
 * Validation: the checks that need the whole resolved config (one setting against another, and
 * the TLS and web-config files each setting names). Throws the first ConfigError, naming the
 * flag; changes nothing.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../lib/errors.js';
import { checkTlsFiles } from '../lib/tls.js';
import type { Config } from './types.js';

export function checkConfig(cfg: Config): void {
  // Each entry of the file's upstreams: may name TLS files of its own.
  if (cfg.origins['upstreams'] === 'file') for (const u of cfg.upstreams) checkTlsFiles({ ...cfg, ...u, upstream: u.url });
  checkTlsFiles(cfg);
  if (cfg.collectorGpu && cfg.gpuSource === 'dcgm-exporter' && cfg.dcgmExporterUrl === '') {
    throw new ConfigError('--dcgm-exporter-url', 'is required with --gpu-source dcgm-exporter: the exporter\'s metrics URL, e.g. http://127.0.0.1:9400/metrics');
  }
  if (cfg.bottleneckWindow < cfg.bottleneckInterval) throw new ConfigError('--bottleneck-window', `must be at least --bottleneck-interval (${cfg.bottleneckInterval}s): the window holds the readings of several evaluations`);
  if (cfg.tenantFrom === 'header' && cfg.tenantHeader === '') throw new ConfigError('--tenant-header', 'is required with --tenant-from header: the request header naming the tenant, e.g. x-tenant-id');
  checkWorkloadTrace(cfg);
  for (const c of cfg.slos.promptClasses) {
    if (!cfg.promptTokensClasses.includes(c.promptTokensLe)) {
      throw new ConfigError(`--config ${cfg.configFile}: slos.prompt_classes`, `prompt_tokens_le ${c.promptTokensLe} is not one of --prompt-tokens-classes (${cfg.promptTokensClasses.join(', ')})`);
    }
  }
}

/** The trace file must be writable now (its directory exists, the file is ours to append to), and each tokenizer path must exist. */
function checkWorkloadTrace(cfg: Config): void {
  for (const t of cfg.tokenizers) {
    try {
      statSync(t.path);
    } catch (err) {
      throw new ConfigError('--tokenizers', `${t.name}=${t.path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (err as Error).message}`);
    }
  }
  if (cfg.workloadTrace === '') return;
  const file = resolve(cfg.workloadTrace);
  const where = (err: unknown) => new ConfigError('--workload-trace', `cannot write ${file}: ${(err as Error).message}`, { cause: err });
  try {
    if (statSync(file, { throwIfNoEntry: false })?.isDirectory()) throw new Error('it is a directory');
    accessSync(dirname(file), constants.W_OK | constants.X_OK);
    if (statSync(file, { throwIfNoEntry: false })) accessSync(file, constants.W_OK);
  } catch (err) {
    throw where(err);
  }
}
