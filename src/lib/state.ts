/**
 * Small secrets infermeter makes for itself on first start and keeps in its state directory
 * (--state-dir), so that they stay the same across restarts without a public default. Each is
 * one file, mode 0600, created atomically: a hard link of a fully written temporary file, so
 * two processes starting at once (cluster workers, a reload) agree on one value and never
 * read half a file.
 */
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from './errors.js';

/** The secret kept in `dir/name`: read when the file exists, else 32 random bytes (hex) written there first. */
export function keptSecret(dir: string, name: string): string {
  const path = join(dir, name);
  const existing = readSecret(path);
  if (existing !== null) return existing;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  const kept = readSecret(path);
  if (kept === null) throw new Error(`${path} is empty`);
  return kept;
}

function readSecret(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const v = text.trim();
  if (v === '') throw new Error(`${path} is empty; delete it to make a new one`);
  return v;
}

/** The salt made on first start, from --state-dir or the config file's directory. */
export function keptTenantSalt(stateDir: string, configFile: string | null): string {
  const dir = stateDir || (configFile ? dirname(resolve(configFile)) : '');
  const where = stateDir ? '--state-dir' : `--state-dir (default: the directory of --config ${configFile})`;
  if (!dir) throw new ConfigError('--state-dir', 'is required with --tenant-from api-key unless --tenant-salt is set (or --config is, whose directory is the default): where the random salt made on first start is kept');
  try {
    return keptSecret(dir, 'tenant-salt');
  } catch (err) {
    throw new ConfigError(where, `cannot keep the tenant salt in ${dir}: ${(err as Error).message}; set --state-dir to a writable directory, or --tenant-salt`, { cause: err });
  }
}

/**
 * The prompt-hash salt (lib/block-hash.ts) made on first start: kept in --state-dir, else
 * beside --config, else beside the workload trace it keys (docs/workload-trace.md).
 */
export function keptPromptSalt(stateDir: string, configFile: string | null, traceFile: string): string {
  const dir = stateDir || (configFile ? dirname(resolve(configFile)) : dirname(resolve(traceFile)));
  try {
    return keptSecret(dir, 'prompt-salt');
  } catch (err) {
    throw new ConfigError('--prompt-hash-salt', `cannot keep the prompt-hash salt in ${dir}: ${(err as Error).message}; set --state-dir to a writable directory, or --prompt-hash-salt`, { cause: err });
  }
}
