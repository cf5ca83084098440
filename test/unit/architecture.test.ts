/**
 * The house rules of docs/architecture.md, checked on the real tree: no import circles, lib/ a
 * leaf, no import from a lower floor into a higher one or across a floor's rooms (the rules are
 * data in .dependency-cruiser.cjs, checked by dependency-cruiser), and no file over 400 lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helpers.js';

const run = promisify(execFile);

interface Cruise {
  summary: { violations: { rule: { name: string }; from: string; to: string }[]; totalCruised: number };
}

async function cruise(): Promise<Cruise> {
  const bin = join(ROOT, 'node_modules/.bin/depcruise');
  const { stdout } = await run(bin, ['src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd: ROOT, maxBuffer: 64 << 20 })
    .catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' })); // exits non-zero on a violation; the JSON still says which
  return JSON.parse(stdout) as Cruise;
}

test('src/ keeps the rooms of docs/architecture.md: no circle, no import up a floor or across one', { timeout: 120_000 }, async () => {
  const { summary } = await cruise();
  assert.ok(summary.totalCruised > 150, `dependency-cruiser read the tree (${summary.totalCruised} modules)`);
  const found = summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  assert.deepEqual(found, [], found.join('\n'));
});

test('the rules name every room: a file outside them, an upward and a sideways import are each a violation', async () => {
  const cfg = (await import(join(ROOT, '.dependency-cruiser.cjs'))) as { default: { forbidden: { name: string; from: { path?: string }; to: { path?: string } }[] } };
  const rules = cfg.default.forbidden;
  const matches = (rx: string | undefined, file: string) => rx !== undefined && new RegExp(rx).test(file);
  const broken = (from: string, to: string) => rules.filter((r) => r.from.path !== undefined && matches(r.from.path, from) && matches(r.to.path, to)).map((r) => r.name);
  assert.deepEqual(broken('src/lib/log.ts', 'src/config.ts').sort(), ['floor-0-lib', 'lib-is-a-leaf']);
  assert.deepEqual(broken('src/collectors/runner.ts', 'src/metrics/catalog.ts'), ['floor-3-proxy-collectors-sim']);
  assert.deepEqual(broken('src/proxy/meter.ts', 'src/sim/text.ts'), ['sideways-proxy']);
  assert.deepEqual(broken('src/exporters/ui/state.ts', 'src/ops/rules-slo.ts'), ['floor-5-exporters']);
  assert.deepEqual(broken('src/daemon/main.ts', 'src/config.ts'), []);
  assert.deepEqual(broken('src/side/side.ts', 'src/exporters/otlp/otlp.ts'), []);
});

test('no source file is over 400 lines (STYLE.md: over 400 is a sign to split by concept)', () => {
  const long: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const n = readFileSync(join(ROOT, p), 'utf8').split('\n').length - 1;
        if (n > 400) long.push(`${p}: ${n} lines`);
      }
    }
  };
  for (const d of ['src', 'bench', 'scripts']) walk(d);
  assert.deepEqual(long, []);
});

/**
 * Nothing outside metrics/ reads prom-client's registry back (docs/architecture.md, "The
 * machine snapshot"): machine state is read from collectors/snapshot.ts, request figures from
 * the judged batch. A lookup by name is allowed in metrics/ only; a view of every family
 * (which a reader could search by name) in metrics/ and in the exposition renderers of
 * exporters/prometheus/, whose job is writing every family out. Comment lines are not code.
 */
const REGISTRY_READS: readonly { method: RegExp; allowed: RegExp }[] = [
  { method: /\b(getSingleMetric|getSingleMetricAsString)\b/, allowed: /^src\/metrics\// },
  { method: /\b(getMetricsAsJSON|getMetricsAsArray)\b/, allowed: /^src\/(metrics|exporters\/prometheus)\// },
];

function registryReads(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (/^\s*(\/\/|\/\*|\*)/.test(line)) return;
    for (const r of REGISTRY_READS) {
      const m = r.method.exec(line);
      if (m && !r.allowed.test(file)) found.push(`${file}:${i + 1}: ${m[1]}`);
    }
  });
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = `${dir}/${e.name}`;
    return e.isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

test('nothing outside metrics/ reads prom-client\'s registry back by name (machine state comes from the snapshot)', () => {
  const files = tsFiles('src');
  assert.ok(files.length > 150, `read the tree (${files.length} files)`);
  const found = files.flatMap((f) => registryReads(f, readFileSync(join(ROOT, f), 'utf8')));
  assert.deepEqual(found, [], found.join('\n'));
});

test('the registry rule can fail: a lookup by name outside metrics/, or a view of every family outside the renderers, is caught', () => {
  const byName = 'const m = registry.getSingleMetric(M.gpuUtil);';
  assert.deepEqual(registryReads('src/exporters/ui/state.ts', byName), ['src/exporters/ui/state.ts:1: getSingleMetric']);
  assert.deepEqual(registryReads('src/side/side.ts', `x;\nconst t = await registry.getSingleMetricAsString('up');`), ['src/side/side.ts:2: getSingleMetricAsString']);
  assert.deepEqual(registryReads('src/exporters/prometheus/proto.ts', byName), ['src/exporters/prometheus/proto.ts:1: getSingleMetric']);
  assert.deepEqual(registryReads('src/exporters/ui/state.ts', 'const all = await registry.getMetricsAsJSON();'), ['src/exporters/ui/state.ts:1: getMetricsAsJSON']);
  assert.deepEqual(registryReads('src/collectors/runner.ts', 'for (const m of registry.getMetricsAsArray()) {}'), ['src/collectors/runner.ts:1: getMetricsAsArray']);
  assert.deepEqual(registryReads('src/metrics/bottleneck/machine.ts', byName), [], 'metrics/ may');
  assert.deepEqual(registryReads('src/exporters/prometheus/proto.ts', 'const f = await registry.getMetricsAsJSON();'), [], 'the renderers write every family');
  assert.deepEqual(registryReads('src/exporters/ui/state.ts', ' * registry.getSingleMetric(name) is not how this reads'), [], 'a comment line is not code');
});
