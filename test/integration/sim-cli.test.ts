/** `infermeter simulate` runs as a process: flags reach the server; a bad flag exits 2 naming it. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnSimulator } from '../../src/sim/child.js';
import { get } from '../helpers/sim.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

it('serves the flags it was given', async () => {
  const sim = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', 'a,b', '--metrics-format', 'v0', '--vllm-version', '0.6.3']);
  try {
    const models = JSON.parse((await get(`${sim.url}/v1/models`)).text);
    assert.deepEqual(models.data.map((m: { id: string }) => m.id), ['a', 'b']);
    assert.equal(JSON.parse((await get(`${sim.url}/version`)).text).version, '0.6.3');
    assert.equal((await get(`${sim.url}/health`)).status, 200);
    assert.match((await get(`${sim.url}/metrics`)).text, /^vllm:gpu_cache_usage_perc\{model_name="a"\} 0$/m);
  } finally {
    await sim.close();
  }
});

it('a bad value stops startup with the flag named', () => {
  const r = spawnSync(process.execPath, [CLI, 'simulate', '--listen', '127.0.0.1:0', '--error-rate', '2'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--error-rate: expected a fraction between 0 and 1/);
});
