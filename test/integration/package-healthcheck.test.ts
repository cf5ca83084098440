/**
 * The Dockerfile's HEALTHCHECK command, run for real (as Docker would, with the image's
 * node) against a running infermeter: healthy while it serves, unhealthy once it is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { healthcheckArgv, parseDockerfile } from '../fakes/dockerfile.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { TinyUpstream } from '../fakes/tiny-upstream.js';

const dockerfile = readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8');
const argv = healthcheckArgv(parseDockerfile(dockerfile).stages.at(-1)!)!;

function healthcheck(metricsListen: string): number | null {
  const r = spawnSync(process.execPath, argv.slice(1), { env: { INFERMETER_METRICS_LISTEN: metricsListen }, timeout: 10_000 });
  return r.status;
}

test('HEALTHCHECK passes against a running infermeter and fails once it stopped', async () => {
  assert.equal(argv[0], 'node');
  const upstream = new TinyUpstream();
  const infermeter = InfermeterProcess.forUpstream(await upstream.start(), [], {});
  try {
    await infermeter.start();
    const listen = new URL(infermeter.metricsUrl).host;
    assert.equal(healthcheck(listen), 0);
    assert.equal(await infermeter.stop(), 0);
    assert.equal(healthcheck(listen), 1);
  } finally {
    await infermeter.stop();
    await upstream.close();
  }
});
