/**
 * What `docker build` would do, without a Docker engine: the build stage compiles from the
 * context .dockerignore lets through (so src/ never depends on files left out of the image),
 * and the runtime layout (package.json + dist/src + production node_modules) runs the CLI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../fakes/deploy-files.js';
import { dockerignoreFilter } from '../fakes/dockerfile.js';

test('the build stage compiles from the filtered context and the result runs', () => {
  const included = dockerignoreFilter(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
  const ctx = mkdtempSync(join(tmpdir(), 'infermeter-docker-'));
  try {
    for (const entry of readdirSync(ROOT)) if (included(entry)) cpSync(join(ROOT, entry), join(ctx, entry), { recursive: true });
    assert.deepEqual(readdirSync(ctx).filter((e) => e === 'node_modules' || e === 'dist' || e === 'test'), []);
    // Dependencies as `npm ci` would have installed them (the same lockfile).
    symlinkSync(join(ROOT, 'node_modules'), join(ctx, 'node_modules'));
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: ctx, encoding: 'utf8', timeout: 240_000 });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    const pkg = JSON.parse(readFileSync(join(ctx, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
    const version = spawnSync(process.execPath, [join(ctx, pkg.bin['infermeter']!), '--version'], { cwd: '/', encoding: 'utf8' });
    assert.equal(version.stdout.trim(), pkg.version, version.stderr);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
});
