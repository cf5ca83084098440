import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, shippedFiles } from '../../../src/ops/shipped.js';

const root = repoRoot();

test('committed rules, PrometheusRule and dashboards equal the generator output for examples/infermeter.yaml', () => {
  const files = shippedFiles(root);
  assert.ok(files.length >= 5);
  for (const f of files) {
    const committed = readFileSync(join(root, f.path), 'utf8');
    assert.ok(committed === f.text, `${f.path} differs from the generator output: run \`npm run generate:ops\` and commit`);
  }
});

test('`infermeter rules` prints exactly the committed files', () => {
  const cli = join(root, 'dist/src/cli.js');
  const run = (...args: string[]) => execFileSync(process.execPath, [cli, 'rules', '--config', 'examples/infermeter.yaml', ...args], { cwd: root, encoding: 'utf8' });
  assert.equal(run(), readFileSync(join(root, 'deploy/prometheus/rules.yml'), 'utf8'));
  assert.equal(run('--format', 'prometheusrule'), readFileSync(join(root, 'deploy/kubernetes/prometheusrule.yaml'), 'utf8'));
});

test('`infermeter rules` names a bad config and exits 2; an unreadable one exits 1 (README: usage 2, runtime 1)', () => {
  const cli = join(root, 'dist/src/cli.js');
  const bad = join(mkdtempSync(join(tmpdir(), 'rules-bad-')), 'bad.yaml');
  writeFileSync(bad, 'slos:\n  default:\n    ttft: soon\n');
  assert.throws(
    () => execFileSync(process.execPath, [cli, 'rules', '--config', bad], { cwd: root, encoding: 'utf8', stdio: 'pipe' }),
    (err: { status: number; stderr: string }) => err.status === 2 && /--config/.test(err.stderr) && /ttft/.test(err.stderr),
  );
  assert.throws(
    () => execFileSync(process.execPath, [cli, 'rules', '--config', '/nonexistent.yaml'], { cwd: root, encoding: 'utf8', stdio: 'pipe' }),
    (err: { status: number; stderr: string }) => err.status === 1 && /--config/.test(err.stderr) && /nonexistent\.yaml/.test(err.stderr),
  );
});

test('examples/infermeter.yaml is a valid infermeter config', async () => {
  const { resolveConfig } = await import('../../../src/config.js');
  const config = resolveConfig({ config: join(root, 'examples/infermeter.yaml') }, {});
  assert.equal(config.slos.objective, 0.99);
  assert.equal(config.slos.models['meta-llama/Llama-3.1-70B-Instruct']?.ttft, 4);
  assert.ok(config.buckets.ttft.includes(2) && config.buckets.ttft.includes(4), 'thresholds become bucket boundaries');
});
