/**
 * npm run bench:regress — the proxy path's regression check under contention: infermeter
 * (--workers 1) against the bare node:http + undici proxy (bench/bare-proxy.ts), both client
 * modes of bench/contention.ts, at 64 streams × one chunk per 5 ms and 256 × 2 ms, ratios from
 * one run. Prints PASS or FAIL per target and exits 1 when one fails. Not a timed test of
 * `npm test`: run it before and after a change to the proxy path (docs/performance.md).
 *
 * Knobs: REGRESS_ROUNDS (default 5), REGRESS_SECONDS per cell (default 2), REGRESS_WARMUP_SECONDS
 * (default 1), REGRESS_LOADS (default 64x5,256x2), REGRESS_CLIENT (raw, sdk or both; default
 * both), REGRESS_CHUNKS per stream (default 40), REGRESS_NGINX=1 adds nginx as a row (when on
 * PATH), REGRESS_INFERMETER_ARGS extra flags for infermeter (space-separated),
 * REGRESS_NODE_ARGS node flags for infermeter's process (space-separated: `--cpu-prof
 * --cpu-prof-dir=DIR`, `--trace-gc`; its stdout and stderr go to REGRESS_INFERMETER_LOG when set),
 * REGRESS_VARIANT_NODE_ARGS adds a second infermeter started with those node flags instead, as the
 * path `infermeter variant`, in the same interleaved rounds (a V8 setting measured against the
 * default on the same noise; only `infermeter` is checked against the targets),
 * REGRESS_RESULTS the JSON file (default bench-results/regress.json). At the defaults a run
 * takes about 2 × (3 or 4 paths) × 2 modes × (5 × 2 s + 1 s) ≈ 3 minutes.
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { ROOT, startNginx, startProcess } from './lib.js';
import { TARGETS, runContention, withSpread, type ClientMode, type ContentionPath } from './contention.js';

const num = (name: string, dflt: number) => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name}: expected a positive number, got "${process.env[name]}"`);
  return v;
};
const ROUNDS = num('REGRESS_ROUNDS', 5);
const SECONDS = num('REGRESS_SECONDS', 2);
const WARM = num('REGRESS_WARMUP_SECONDS', 1);
const CHUNKS = num('REGRESS_CHUNKS', 40);
const LOADS = (process.env['REGRESS_LOADS'] ?? '64x5,256x2').split(',').filter(Boolean).map((l) => {
  const m = /^(\d+)x(\d+(?:\.\d+)?)$/.exec(l.trim());
  if (!m) throw new Error(`REGRESS_LOADS: expected streams x ms per chunk such as 64x5, got "${l}"`);
  return [Number(m[1]), Number(m[2])] as [number, number];
});
const CLIENT = process.env['REGRESS_CLIENT'] ?? 'both';
if (!['raw', 'sdk', 'both'].includes(CLIENT)) throw new Error(`REGRESS_CLIENT: expected raw, sdk or both, got "${CLIENT}"`);
const MODES: ClientMode[] = CLIENT === 'both' ? ['raw', 'sdk'] : [CLIENT as ClientMode];
const NGINX = process.env['REGRESS_NGINX'] === '1' && spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status === 0;
const EXTRA = (process.env['REGRESS_INFERMETER_ARGS'] ?? '').split(' ').filter(Boolean);
const NODE_ARGS = (process.env['REGRESS_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
const IM_LOG = process.env['REGRESS_INFERMETER_LOG'];
const RESULTS = resolve(ROOT, process.env['REGRESS_RESULTS'] ?? 'bench-results/regress.json');
const node = process.execPath;

const load0 = loadavg();
const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m, { BENCH_MODELS: '64' });
const direct = `http://127.0.0.1:${upstream.match[1]}`;
const bare = await startProcess(node, [`${ROOT}dist/bench/bare-proxy.js`, direct], /^(\d+)\n/m);
const startIm = (nodeArgs: string[]) => startProcess(
  node,
  [...nodeArgs, `${ROOT}dist/src/cli.js`, '--upstream', direct, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', '--log-level', 'info', ...EXTRA],
  /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/,
);
const im = await startIm(NODE_ARGS);
const VARIANT = process.env['REGRESS_VARIANT_NODE_ARGS']?.split(' ').filter(Boolean);
const variant = VARIANT ? await startIm(VARIANT) : null;
if (IM_LOG) {
  const log = createWriteStream(IM_LOG);
  im.child.stdout!.pipe(log);
  im.child.stderr!.pipe(log);
}
const nginx = NGINX ? await startNginx(Number(upstream.match[1])) : null;
const paths: ContentionPath[] = [
  { name: 'direct', url: direct, pids: [] },
  ...(nginx ? [{ name: 'nginx', url: `http://127.0.0.1:${nginx.port}`, pids: [nginx.pid] }] : []),
  { name: 'node http+undici', url: `http://127.0.0.1:${bare.match[1]}`, pids: [bare.child.pid!] },
  { name: 'infermeter', url: `http://127.0.0.1:${im.match[1]}`, pids: [im.child.pid!] },
  ...(variant ? [{ name: 'infermeter variant', url: `http://127.0.0.1:${variant.match[1]}`, pids: [variant.child.pid!] }] : []),
];

let failed = 0;
try {
  const rows = await runContention(paths, { modes: MODES, loads: LOADS, rounds: ROUNDS, seconds: SECONDS, warmSeconds: WARM, chunks: CHUNKS, bare: 'node http+undici' });
  const load1 = loadavg();
  console.log(`\nregression check: infermeter against node http+undici, ratios pooled over ${ROUNDS} rounds (spread = per-round ratios); load average ${load0[0]!.toFixed(1)} at start, ${load1[0]!.toFixed(1)} at end`);
  for (const row of rows.filter((r) => r.path === 'infermeter')) {
    for (const t of TARGETS) {
      const ok = t.ok(row.vsBare![t.key]);
      if (!ok) failed++;
      console.log(`${ok ? 'PASS' : 'FAIL'}  ${row.mode.padEnd(4)} ${`${row.streams} × ${row.gapMs} ms`.padEnd(12)} ${t.label.padEnd(15)} ${withSpread(row, t.key).padEnd(22)} target ${t.bound}`);
    }
  }
  for (const row of rows.filter((r) => r.path === 'infermeter variant')) console.log(`      ${row.mode} ${row.streams} × ${row.gapMs} ms infermeter variant (${VARIANT!.join(' ')}): ${TARGETS.map((t) => `${t.label} ${withSpread(row, t.key)}`).join(' · ')}`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, JSON.stringify({ date: new Date().toISOString(), loadavg: { start: load0, end: load1 }, rounds: ROUNDS, seconds: SECONDS, modes: MODES, rows }, null, 2));
  console.log(`${failed === 0 ? 'PASS' : `FAIL (${failed} targets)`} · raw figures: ${RESULTS}`);
} finally {
  for (const p of [upstream, bare, ...(variant ? [variant] : [])]) p.child.kill('SIGTERM');
  nginx?.stop();
  // infermeter shuts down on SIGTERM and writes its --cpu-prof profiles as it exits: wait for it.
  await new Promise((r) => {
    im.child.once('exit', r);
    im.child.kill('SIGTERM');
    setTimeout(r, 10_000).unref();
  });
}
process.exit(failed === 0 ? 0 : 1);
