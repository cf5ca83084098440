/**
 * External tools a test needs (promtool, systemd-analyze). COMMON rule: under CI (env CI set
 * to anything but "", "false" or "0") a missing tool fails the test, naming the tool and
 * where .ci/run installs it; elsewhere the test is skipped saying why.
 */
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export function underCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env['CI'];
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
}

/** True when `tool args` runs; false (test skipped) when it does not, outside CI; throws under CI. */
export function haveTool(t: TestContext, tool: string, args: string[], pkg: string): boolean {
  if (!spawnSync(tool, args, { stdio: 'ignore' }).error) return true;
  const why = `${tool} is not installed (Debian package ${pkg}; .ci/run installs it)`;
  if (underCi()) throw new Error(`${why}: under CI this check must run`);
  t.skip(why);
  return false;
}

/**
 * For a test's `skip` option: false when the tool is there, or under CI (the test then runs and
 * fails on the missing tool); elsewhere the reason to skip.
 */
export function skipWithout(present: boolean, why: string): string | false {
  return present || underCi() ? false : why;
}
