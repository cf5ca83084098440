/** docs/simulator.md lists every simulate flag with its default, and nothing that does not exist. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SIM_OPTIONS } from '../../../src/sim/options.js';

const doc = readFileSync(new URL('../../../../docs/simulator.md', import.meta.url), 'utf8');

it('every flag is documented with its default', () => {
  const rows = doc.split('\n').filter((l) => l.startsWith('| `--'));
  for (const spec of SIM_OPTIONS) {
    const row = rows.find((r) => r.startsWith(`| \`${spec.flag}\``));
    assert.ok(row, `${spec.flag} missing from docs/simulator.md`);
    assert.ok(row.includes(spec.default), `${spec.flag}: default ${spec.default} not in "${row}"`);
  }
  assert.equal(rows.length, SIM_OPTIONS.length);
});
