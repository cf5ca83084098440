// `npm run test:mutation [module ...]`: one Stryker run per module, one after another (the
// machine has 2 cores; MUTATION_CONCURRENCY sets Stryker's test processes, default 2), then
// a table of the mutation score per module from the JSON reports in reports/mutation/.
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { MODULES, moduleNamed } from './modules.mjs';

const chosen = process.argv.length > 2 ? process.argv.slice(2).map(moduleNamed) : MODULES;
const rows = [];
let failed = false;
for (const mod of chosen) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['node_modules/@stryker-mutator/core/bin/stryker.js', 'run', 'stryker.config.mjs'], {
    stdio: 'inherit',
    env: { ...process.env, MUTATION_MODULE: mod.name },
  });
  if (r.status !== 0) failed = true;
  rows.push({ mod, seconds: Math.round((Date.now() - t0) / 1000), ...score(mod.name) });
}
console.log('\nmodule                killed  survived  timeout  no-cov  score   seconds');
for (const r of rows) {
  console.log(`${r.mod.name.padEnd(20)} ${String(r.killed).padStart(7)} ${String(r.survived).padStart(9)} ${String(r.timeout).padStart(8)} ${String(r.noCoverage).padStart(7)}  ${r.score.padStart(6)} ${String(r.seconds).padStart(8)}`);
}
process.exit(failed ? 1 : 0);

function score(name) {
  const file = `reports/mutation/${name}.json`;
  const out = { killed: 0, survived: 0, timeout: 0, noCoverage: 0, score: 'n/a' };
  if (!existsSync(file)) return out;
  const report = JSON.parse(readFileSync(file, 'utf8'));
  for (const f of Object.values(report.files)) {
    for (const m of f.mutants) {
      if (m.status === 'Killed') out.killed++;
      else if (m.status === 'Survived') out.survived++;
      else if (m.status === 'Timeout') out.timeout++;
      else if (m.status === 'NoCoverage') out.noCoverage++;
    }
  }
  const valid = out.killed + out.survived + out.timeout + out.noCoverage;
  // Stryker's own score: detected (killed + timeout) over valid mutants.
  out.score = valid === 0 ? 'n/a' : `${((100 * (out.killed + out.timeout)) / valid).toFixed(1)}%`;
  return out;
}
