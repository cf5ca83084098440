import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSloConfig } from '../../../src/slo/config.js';
import { generateRules } from '../../../src/ops/rules.js';
import { repoRoot } from '../../../src/ops/shipped.js';

test('docs/slo-alerts-dashboards.md lists every alert the generator can emit', () => {
  const doc = readFileSync(join(repoRoot(), 'docs/slo-alerts-dashboards.md'), 'utf8');
  const all = parseSloConfig({ default: { ttft: 1, ttfo: 1, tpot: 1, e2e: 1 } }, 'test');
  const alerts = new Set(generateRules(all).flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : []))));
  for (const a of alerts) {
    const generic = a.replace(/^Infermeter(TTFT|TTFO|TPOT|E2E)/, 'Infermeter<SLO>');
    assert.ok(doc.includes(`\`${generic}\``), `${a} is not in the alerts table`);
  }
});
