import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../../src/ops/shipped.js';
import { hasPromtool, promtool } from '../unit/ops/rules-helpers.js';
import { skipWithout } from '../helpers/tools.js';

const root = repoRoot();
const skip = skipWithout(hasPromtool(), 'promtool is not installed (Debian: apt-get install prometheus)');

test('promtool check rules accepts deploy/prometheus/rules.yml', { skip }, () => {
  const r = promtool(['check', 'rules', 'deploy/prometheus/rules.yml'], root);
  assert.equal(r.status, 0, r.output);
});

test('promtool check rules accepts the groups of deploy/kubernetes/prometheusrule.yaml', { skip }, () => {
  const manifest = parse(readFileSync(join(root, 'deploy/kubernetes/prometheusrule.yaml'), 'utf8')) as { spec: { groups: unknown } };
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-cr-'));
  try {
    writeFileSync(join(dir, 'rules.yml'), stringify({ groups: manifest.spec.groups }));
    const r = promtool(['check', 'rules', join(dir, 'rules.yml')]);
    assert.equal(r.status, 0, r.output);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('promtool test rules: every alert fires on a breach, stays silent otherwise, and resolves', { skip }, () => {
  const dir = 'deploy/prometheus/tests';
  const files = readdirSync(join(root, dir)).filter((f) => f.endsWith('.yml')).map((f) => `${dir}/${f}`);
  assert.ok(files.length >= 2);
  const r = promtool(['test', 'rules', ...files], root);
  assert.equal(r.status, 0, r.output);

  // Every alert of the rule file is exercised: firing in some test, and silent in the never-scraped one.
  const rules = parse(readFileSync(join(root, 'deploy/prometheus/rules.yml'), 'utf8')) as { groups: { rules: { alert?: string }[] }[] };
  const alerts = new Set(rules.groups.flatMap((g) => g.rules.flatMap((x) => (x.alert ? [x.alert] : []))));
  const tests = files.map((f) => readFileSync(join(root, f), 'utf8')).join('\n');
  for (const a of alerts) {
    assert.match(tests, new RegExp(`alertname: ${a}\\n\\s+exp_alerts:`), `${a} is never expected to fire`);
    assert.match(tests, new RegExp(`alertname: ${a}\\}?\\n(?!\\s+exp_alerts)`), `${a} is never expected to stay silent`);
  }
});

test('promtool check config accepts deploy/prometheus/prometheus.yml', { skip }, () => {
  const r = promtool(['check', 'config', 'deploy/prometheus/prometheus.yml'], root);
  assert.equal(r.status, 0, r.output);
});
