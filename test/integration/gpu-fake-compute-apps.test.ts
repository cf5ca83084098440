/** The fake nvidia-smi answers --query-compute-apps as the real one does (CSV, header and units as asked), and the parser reads it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { parseComputeApps } from '../../src/collectors/gpu/attribution.js';

const run = (args: string[], apps: string) =>
  spawnSync(FAKE_NVIDIA_SMI, args, { encoding: 'utf8', env: { ...process.env, FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_COMPUTE_APPS: apps } });

test('fake nvidia-smi --query-compute-apps: one row per (process, GPU), UUIDs those of --query-gpu', () => {
  const gpus = run(['--query-gpu=index,uuid', '--format=csv,noheader'], '').stdout.trim().split('\n').map((l) => l.split(', ')[1]);
  const full = run(['--query-compute-apps=pid,gpu_uuid,used_memory', '--format=csv'], '4242:1:2048,77:0');
  assert.equal(full.status, 0);
  assert.equal(full.stdout, `pid, gpu_uuid, used_memory [MiB]\n4242, ${gpus[1]}, 2048 MiB\n77, ${gpus[0]}, 1024 MiB\n`);
  const bare = run(['--query-compute-apps=pid,gpu_uuid', '--format=csv,noheader,nounits'], '4242:1,9:5');
  assert.equal(bare.stdout, `4242, ${gpus[1]}\n`, 'a process on a GPU that does not exist is not listed');
  assert.deepEqual(parseComputeApps(bare.stdout), [{ pid: 4242, uuid: gpus[1] }]);
  assert.equal(run(['--query-compute-apps=pid,gpu_uuid', '--format=csv,noheader'], '').stdout, '', 'no processes: no rows');
  const bad = run(['--query-compute-apps=pid,colour', '--format=csv'], '');
  assert.equal(bad.status, 2);
  assert.match(bad.stdout, /Field "colour" is not a valid field to query/);
  const badEnv = run(['--query-compute-apps=pid', '--format=csv'], 'x:y');
  assert.equal(badEnv.status, 2);
  assert.match(badEnv.stderr, /FAKE_NVIDIA_SMI_COMPUTE_APPS: expected pid:gpu/);
});
