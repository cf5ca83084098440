// Stryker's buildCommand, run once per module inside its sandbox: compiles only the module's
// tests and what they import (about a tenth of the project), so a module's build takes
// seconds instead of the full `tsc` run.
import { writeFileSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { moduleNamed } from './modules.mjs';

const mod = moduleNamed(process.argv[2] ?? '');
const only = process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : null;
const files = mod.tests.filter((t) => existsSync(t) && (only === null || only.includes(t)));
if (files.length === 0) process.exit(0); // a baseline for a module that has no tests yet
writeFileSync('tsconfig.mutation.json', JSON.stringify({
  extends: './tsconfig.json',
  compilerOptions: { incremental: false, sourceMap: false },
  include: [],
  files,
}, null, 2));
// Stryker links node_modules into the sandbox only after the build; the sandbox lies inside the
// project, so resolution finds the project's own TypeScript one folder tree up.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.mutation.json'], { stdio: 'inherit' });
