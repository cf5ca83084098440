/**
 * TEST-ONLY switches, honoured only when the environment has INFERMETER_TEST_HOOKS=1 (never
 * set by anything infermeter ships; docs/deploy.md says so). They let tests prove what the
 * probes say in states that are hard to reach from outside:
 * - INFERMETER_TEST_LISTEN_DELAY_MS: the proxy listener opens this much later (readiness
 *   before the proxy listens);
 * - SIGUSR2 blocks the proxy loop that receives it for INFERMETER_TEST_BLOCK_MS (default
 *   3000) without yielding (a wedged loop, for liveness).
 * Without INFERMETER_TEST_HOOKS=1 none of this exists: SIGUSR2 keeps Node's default.
 */
export function testHooksOn(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['INFERMETER_TEST_HOOKS'] === '1';
}

export function listenDelayMs(env: NodeJS.ProcessEnv = process.env): number {
  return testHooksOn(env) ? Number(env['INFERMETER_TEST_LISTEN_DELAY_MS'] ?? 0) || 0 : 0;
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
