// StrykerJS for `npm run test:mutation` (scripts/mutation/run.mjs sets MUTATION_MODULE and runs
// this once per module). The command runner runs node's own test runner on the module's
// compiled tests for every mutant; mutant switching means one build per module.
import { moduleNamed, compiled } from './scripts/mutation/modules.mjs';
import { existsSync } from 'node:fs';

const mod = moduleNamed(process.env.MUTATION_MODULE ?? '');
// MUTATION_TESTS (comma-separated .ts paths) runs only those of the module's tests: a quicker
// run whose score is a lower bound of the full one.
const only = process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : null;
const tests = mod.tests.filter((t) => existsSync(t) && (only === null || only.includes(t))).map(compiled);
// `node --test` with no file runs every test it can find; a module without tests yet (only
// when measuring a baseline) gets a command that kills nothing, so every mutant survives.
const command = tests.length > 0 ? `node --test --test-reporter=dot ${tests.join(' ')}` : 'node -e ""';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'command',
  commandRunner: { command },
  buildCommand: `node scripts/mutation/build.mjs ${mod.name}`,
  mutate: mod.mutate,
  coverageAnalysis: 'off',
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 2),
  // A mutant that loops for ever is a timeout (counted as detected); 3 s over the dry run's time ends it quickly.
  // MUTATION_TIMEOUT_MS raises it on a loaded machine, where a passing run can take longer than that.
  timeoutMS: Number(process.env.MUTATION_TIMEOUT_MS ?? 3000),
  // The sandbox needs the sources, tests, fixtures and configs; not the build, the docs or reports
  // (but docs/bottleneck.md, which the bottleneck unit test compares with the rules table).
  ignorePatterns: ['dist', 'dist-*', 'reports', 'docs/*', '!docs/bottleneck.md', 'bench-results', '.gl', '.whl', 'grafana/**/*.png', '*.tgz'],
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${mod.name}.json` },
  htmlReporter: { fileName: `reports/mutation/${mod.name}.html` },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
