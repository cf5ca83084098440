/** A reload that changes the upstreams: list names it as restart-only (pools, collectors and labels are built once). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../../src/config.js';
import { reresolve } from '../../../src/daemon/reload.js';

test('reresolve: a changed upstreams: list is named as needing a restart; an unchanged one is not', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'infermeter-reload-up-')), 'c.yml');
  writeFileSync(file, 'upstreams:\n  - { name: a, url: "http://127.0.0.1:8001" }\n  - { name: b, url: "http://127.0.0.1:8002" }\n');
  const cfg = resolveConfig({ config: file }, {});
  writeFileSync(file, 'logLevel: debug\nupstreams:\n  - { name: a, url: "http://127.0.0.1:8001" }\n  - { name: b, url: "http://127.0.0.1:8002" }\n');
  const same = reresolve(cfg);
  assert.ok(same.ok);
  assert.deepEqual(same.restartNeeded, []);
  writeFileSync(file, 'upstreams:\n  - { name: a, url: "http://127.0.0.1:8001", gpus: [0] }\n  - { name: b, url: "http://127.0.0.1:8002" }\n');
  const changed = reresolve(cfg);
  assert.ok(changed.ok);
  assert.deepEqual(changed.restartNeeded, ['upstreams']);
});
