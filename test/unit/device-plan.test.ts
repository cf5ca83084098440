/**
 * What scripts/device/run.sh asks a driver's dmon for, read from `dmon -h`: the -s groups
 * listed under -s (not the -o or --gpm-options letters), the GPM ids, and the fallback when
 * the help lists no groups in the form read; and the fixture names and scaling rows made
 * from a run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capturePlan, FALLBACK_GROUPS, helpGroups } from '../../scripts/device/plan.js';
import { fixtureName, modelSlug, runTag, type CaptureRecord } from '../../scripts/device/fixtures.js';
import { scalingFrom, scalingMarkdown } from '../../scripts/device/scaling.js';
import { dmonHelp, driverCaps } from '../../src/sim/gpu/driver.js';

// The layout nvidia-smi's own help uses for -s (letter, dash, name, indented under the option).
const HELP = `    -s,   --select=        One or more metrics [default=puc]
                           Can be any of the following:
                               p - Power Usage and Temperature
                               u - Utilization
                               c - Proc and Mem Clocks
                               v - Power and Thermal Violations
                               m - FB, Bar1 and CC Protected Memory
                               e - ECC Errors and PCIe Replay errors
                               t - PCIe Rx and Tx Throughput
    -o,   --options=       One or more from the following:
                               D - Include Date (YYYYMMDD) in scrolling output
                               T - Include Time (HH:MM:SS) in scrolling output
    --gpm-metrics=         Comma-separated list of GPM metrics (no space in between) to watch
                           Available metrics:
                               Graphics Activity            = 1
                               SM Activity                  = 2
                               SM Occupancy                 = 3
    --gpm-options=         Options of GPM metrics:
                               d - display device metrics
                               m - display MIG metrics
`;

test('plan: every -s group the help lists, in its order, and nothing from other options', () => {
  assert.equal(helpGroups(HELP), 'pucvmet');
  assert.deepEqual(capturePlan(HELP), { groups: 'pucvmet', groupsFallback: false, gpmIds: [1, 2, 3], gpmDefaultIds: [2, 3], gpmOptions: true });
  // A driver that lists a group this project has not seen still gets it asked for.
  assert.equal(helpGroups(HELP.replace('t - PCIe', 'x - Something new\n                               t - PCIe')), 'pucvmext');
});

test('plan: no groups listed falls back; no --gpm-metrics asks for none', () => {
  const bare = '    -s,   --select=        One or more metrics [default=puc]\n    -d,   --delay=\n';
  assert.deepEqual(capturePlan(bare), { groups: FALLBACK_GROUPS, groupsFallback: true, gpmIds: [], gpmDefaultIds: [], gpmOptions: false });
});

test("plan: the fake's help reads like the real one (every group, every GPM id it knows)", () => {
  const p = capturePlan(dmonHelp(driverCaps('550.127.05', {})));
  assert.deepEqual([p.groups, p.gpmIds, p.gpmOptions], ['pucvmet', [1, 2, 3, 5, 10, 13, 20, 21, 60, 61], true]);
  assert.deepEqual(capturePlan(dmonHelp(driverCaps('470.82.01', {}))).gpmIds, []);
});

test('fixtures: names carry the command, GPU count, board and driver branch; dry runs say fake', () => {
  const facts = { dryRun: false, date: '2026-12-01', gpuCount: 8, gpuModel: 'NVIDIA H200', driverVersion: '570.86.15', cudaVersion: '12.8', cpuModel: 'x', cpus: 16 };
  assert.equal(modelSlug('NVIDIA H100 80GB HBM3'), 'h100-80gb-hbm3');
  assert.equal(runTag(facts), '8gpu-h200-r570');
  assert.equal(runTag({ ...facts, dryRun: true }), '8gpu-fake-h200-r570');
  const rec = (id: string, args: string, rc = 0): CaptureRecord => ({ id, rc, seconds: 1, args: args.split(' ') });
  assert.equal(fixtureName(rec('dmon-all', 'dmon -s pucvmet -o DT -d 1 -c 20'), 't', []), 'nvidia-smi-dmon-s-pucvmet-o-DT-t.txt');
  assert.equal(fixtureName(rec('dmon-gpm', 'dmon --gpm-metrics 2,3 -o DT'), 't', [1, 2, 3, 4, 5, 10]), 'nvidia-smi-dmon-gpm-metrics-2-3-o-DT-t.txt');
  assert.equal(fixtureName(rec('dmon-gpm', 'dmon --gpm-metrics 1,2,3,4,5,10 -o DT', 2), 't', [1, 2, 3, 4, 5, 10]), 'nvidia-smi-dmon-gpm-metrics-all-listed-o-DT-t-exit2.txt');
  assert.equal(fixtureName(rec('query-facts-plain', '--query-gpu=index --format=csv,noheader,nounits'), 't', []), 'nvidia-smi-query-gpu-facts-noheader-nounits-t.csv');
  assert.equal(fixtureName(rec('banner', ''), 't', []), null);
});

test('scaling: knee per worker count against one worker, CPU per chunk per load, a knee past the first step shown as such', () => {
  const cap = (path: string, cpu: number) => ({ section: 'capacity', streams: 64, gapMs: 5, path, cpuUsPerChunk: cpu, rootCpuUsPerChunk: 1, chunksPerSecond: 10000, addedTtftP50: 0.5 });
  const rows = [
    cap('direct', Number.NaN), cap('infermeter --workers 1', 20), cap('infermeter --workers 2', 25), cap('infermeter --workers 4', 30),
    { section: 'knee', streams: 128, offeredChunksPerSecond: 25600, path: 'direct', chunksPerSecond: 22000 },
    { section: 'knee', streams: 256, offeredChunksPerSecond: 51200, path: 'direct', chunksPerSecond: 43000 },
    { section: 'knee-summary', path: 'infermeter --workers 1', kneeChunksPerSecond: 25600, reached: true },
    { section: 'knee-summary', path: 'infermeter --workers 2', kneeChunksPerSecond: 51200, reached: false },
    { section: 'knee-summary', path: 'infermeter --workers 4', kneeChunksPerSecond: 0, reached: true },
  ];
  const s = scalingFrom(rows);
  assert.deepEqual(s.rows.map((r) => [r.path, r.knee, r.kneeVsOneWorker, r.loads['64 × 5 ms']!.cpuUsPerChunk]), [
    ['infermeter --workers 1', 25600, 1, 20], ['infermeter --workers 2', 51200, 2, 25], ['infermeter --workers 4', 0, null, 30],
  ]);
  const md = scalingMarkdown(s);
  assert.match(md, /\| infermeter --workers 2 \| ≥ 51,200 \(not reached\) \| ≥ 2\.00× \| 25\.0 \| 1\.0 \| 10,000 \|/);
  assert.match(md, /\| infermeter --workers 4 \| < 25,600 \(past it at the first step\) \| n\/a \|/);
  assert.match(md, /relayed 22,000 of 25,600 offered chunks\/s at 128 streams \(86%\), 43,000 of 51,200 offered chunks\/s at 256 streams \(84%\)/);
});
