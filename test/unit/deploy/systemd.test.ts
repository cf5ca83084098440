/**
 * deploy/systemd: the unit's hardening, checked key by key; `systemd-analyze verify` and
 * its offline security score where systemd is installed; the example environment file
 * resolves through the real config schema.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPTIONS, envName, resolveConfig } from '../../../src/config.js';
import { readRepo } from '../../fakes/deploy-files.js';
import { haveTool } from '../../helpers/tools.js';

const UNIT = readRepo('deploy/systemd/infermeter.service');

/** section → key → every value given (keys such as DeviceAllow= repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) {
      section = new Map();
      out.set(s[1]!, section);
      continue;
    }
    assert.ok(section, `"${line}" is inside a section`);
    const eq = line.indexOf('=');
    assert.ok(eq > 0, `"${line}" is key=value`);
    const key = line.slice(0, eq);
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

const unit = parseUnit(UNIT);
const service = unit.get('Service')!;
const one = (key: string) => service.get(key)?.at(-1);

test('runs unprivileged with a read-only system and its own /tmp', () => {
  assert.ok(one('DynamicUser') === 'yes' || (one('User') && one('User') !== 'root'));
  assert.equal(one('ProtectSystem'), 'strict');
  assert.equal(one('NoNewPrivileges'), 'yes');
  assert.equal(one('PrivateTmp'), 'yes');
  assert.equal(one('CapabilityBoundingSet'), '');
  const families = one('RestrictAddressFamilies')!.split(/\s+/);
  for (const f of ['AF_INET', 'AF_INET6', 'AF_UNIX']) assert.ok(families.includes(f), f);
  assert.ok(!families.includes('AF_PACKET'));
});

test('keeps what Node and nvidia-smi need', () => {
  assert.notEqual(one('MemoryDenyWriteExecute'), 'yes', 'Node\'s JIT needs W+X memory');
  assert.notEqual(one('PrivateDevices'), 'yes', 'PrivateDevices would hide /dev/nvidia*');
  const allowed = service.get('DeviceAllow') ?? [];
  assert.ok(allowed.some((d) => /^char-nvidia\*?\s+rw$/.test(d)), 'the NVIDIA device groups are allowed');
  assert.ok(allowed.some((d) => d.startsWith('/dev/nvidiactl ')));
});

test('reads its settings from the optional environment file and restarts on failure', () => {
  assert.deepEqual(service.get('EnvironmentFile'), ['-/etc/infermeter/env']);
  assert.equal(one('Restart'), 'on-failure');
  assert.match(one('ExecStart')!, /\/infermeter$/);
  assert.ok(Number(one('TimeoutStopSec')) > 30, 'longer than the default --shutdown-timeout, so draining completes');
  assert.deepEqual(unit.get('Install')?.get('WantedBy'), ['multi-user.target']);
});

test('systemctl reload sends SIGHUP (the config reload); stop leaves time for the drain', () => {
  assert.equal(one('ExecReload'), '/bin/kill -HUP $MAINPID');
  const stop = Number(/^(\d+)/.exec(one('TimeoutStopSec')!)![1]);
  const drain = resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {}).shutdownTimeout;
  assert.ok(stop > drain, `TimeoutStopSec ${stop} s > --shutdown-timeout ${drain} s`);
});

test('env.example names only real variables, and they resolve', () => {
  const known = new Set([...OPTIONS.map(envName), 'INFERMETER_CONFIG']);
  const env: Record<string, string> = {};
  for (const raw of readRepo('deploy/systemd/env.example').split('\n')) {
    const line = raw.replace(/^#(?=[A-Z])/, '').trim();
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (!m) continue;
    if (m[1]!.startsWith('INFERMETER_')) assert.ok(known.has(m[1]!), `${m[1]} is an infermeter variable`);
    else assert.match(m[1]!, /^OTEL_/);
    if (!raw.startsWith('#')) env[m[1]!] = m[2]!;
  }
  const config = resolveConfig({}, env);
  assert.equal(config.upstream, env['INFERMETER_UPSTREAM']);
});

test('systemd-analyze verify accepts the unit; offline security exposure stays low', (t) => {
  if (!haveTool(t, 'systemd-analyze', ['--version'], 'systemd')) return;
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-unit-'));
  try {
    // verify checks that ExecStart's binary exists: point it at node for the check.
    const path = join(dir, 'infermeter.service');
    writeFileSync(path, UNIT.replace(/^ExecStart=.*$/m, `ExecStart=${process.execPath} -e 0`));
    const v = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr);
    assert.equal(v.stderr.trim(), '', 'no warnings');
    const s = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', path], { encoding: 'utf8' });
    const m = /Overall exposure level for [^:]+: ([\d.]+)/.exec(s.stdout);
    if (!m) return t.diagnostic('this systemd has no offline security analysis');
    assert.ok(Number(m[1]) <= 3, `exposure ${m[1]} (0 best, 10 worst)`);
    t.diagnostic(`systemd-analyze security exposure: ${m[1]}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
