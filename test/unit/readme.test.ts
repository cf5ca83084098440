import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderReadme, seriesFacts } from '../../scripts/readme-tables.js';
import { readSloConfig } from '../../src/ops/rules-command.js';
import { ROOT } from '../helpers.js';

test('README flag and metric tables match the code, series counts included (run `npm run docs` after changing either)', async () => {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  assert.equal(readme, renderReadme(readme, await seriesFacts(readSloConfig(`${ROOT}examples/infermeter.yaml`))));
});

test('README states the two commands and every metric definition', () => {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  assert.match(readme, /npm run demo/);
  assert.match(readme, /npm ci && npm test/);
  for (const term of ['TTFT', 'TTFO', 'E2E', 'TPOT', 'inter-chunk', 'outcome', 'goodput']) assert.ok(readme.includes(term), term);
});
