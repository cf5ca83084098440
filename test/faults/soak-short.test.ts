// test-group: alone (20,000 requests: the machine to itself)
/**
 * The CI-sized soak (npm run soak runs 1,000,000): 20,000 requests against the simulator
 * with injected faults and client aborts; every request accounted for in
 * infermeter_requests_total, descriptors flat. RSS and loop delay are reported (a run this
 * short is still warming up; the long soak judges them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { printSoak, runSoak } from '../../bench/soak.js';
import { report } from './harness.js';

test('short soak: 20,000 requests, all accounted for, descriptors flat', async () => {
  const r = await runSoak({ requests: 20_000, concurrency: 32, maxSeconds: 240, log: () => undefined });
  printSoak(r);
  const first = r.quarters[0]!;
  const last = r.quarters[3]!;
  report({ scenario: 'short soak vs simulator (faults + aborts)', requests: r.sent, bytesCompared: 0, anomalies: Math.abs(r.sent - r.counted), peakRssMiB: Math.round(Math.max(...r.quarters.map((q) => q.rssMiB))), fdsBefore: first.fds, fdsAfter: last.fds });
  assert.equal(r.sent, 20_000, 'the run finished within its time bound');
  assert.equal(r.counted, r.sent, `every request has one outcome: ${JSON.stringify(r.byOutcome)}`);
  assert.ok(last.fds <= first.fds + 16, `descriptors ${first.fds} → ${last.fds}`);
});
