/**
 * TEST-ONLY switches, honoured only when the environment has INFERMETER_TEST_HOOKS=1 (never
 * set by anything infermeter ships; docs/deploy.md says so). They let tests prove what the
 * probes say in states that are hard to reach from outside:
 * - INFERMETER_TEST_LISTEN_WHEN: the proxy listener opens only once the file this names
 *   exists (readiness before the proxy listens, for as long as the test needs, whatever the
 *   machine's load);
 * - SIGUSR2 blocks the proxy loop that receives it for INFERMETER_TEST_BLOCK_MS (default
 *   3000) without yielding (a wedged loop, for liveness).
 * Without INFERMETER_TEST_HOOKS=1 none of this exists: SIGUSR2 keeps Node's default.
 */
import { existsSync } from 'node:fs';

export function testHooksOn(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['INFERMETER_TEST_HOOKS'] === '1';
}

/** Resolves when the proxy listener may open: at once, or (hooks on) once INFERMETER_TEST_LISTEN_WHEN's file exists. */
export function listenGate(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const file = testHooksOn(env) ? env['INFERMETER_TEST_LISTEN_WHEN'] : undefined;
  if (!file) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => (existsSync(file) ? resolve() : void setTimeout(check, 20));
    check();
  });
}

/** Installs the SIGUSR2 block switch on this proxy loop (hooks on only). */
export function installBlockSwitch(env: NodeJS.ProcessEnv = process.env): void {
  if (!testHooksOn(env)) return;
  const ms = Number(env['INFERMETER_TEST_BLOCK_MS'] ?? 3000) || 3000;
  process.on('SIGUSR2', () => {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      /* wedged on purpose */
    }
  });
}
