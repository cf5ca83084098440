/**
 * npm run screenshot:ui: runs `infermeter demo` (simulator, fake nvidia-smi, stepped load),
 * lets the charts fill for UI_SCREENSHOT_SECONDS (default 90), and captures the live status
 * page with headless Chromium (CHROMIUM, default /usr/bin/chromium) into docs/status-page.png,
 * the picture README shows. Every host but loopback is unresolvable for the browser.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../src/lib/spawn.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
const SECONDS = Number(process.env['UI_SCREENSHOT_SECONDS'] ?? 90);
const OUT = process.env['UI_SCREENSHOT_OUT'] ?? join(ROOT, 'docs/status-page.png');

const demo = spawn(process.execPath, [join(ROOT, 'dist/src/cli.js'), 'demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--rates', '2,6,12,6', '--step', '20s', '--summary-every', '10s'], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  demo.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const m = /live status page\s+(http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]!);
  });
  demo.once('exit', (code) => reject(new Error(`demo exited (${code}) before printing the page URL:\n${out}`)));
});
console.log(`demo running; page ${url}; capturing in ${SECONDS}s`);
await new Promise((r) => setTimeout(r, SECONDS * 1000));
const profile = mkdtempSync(join(tmpdir(), 'ui-shot-'));
try {
  const r = await runCommand(CHROMIUM, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    `--user-data-dir=${profile}`, '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', '--hide-scrollbars', '--window-size=1400,1500',
    '--virtual-time-budget=5000', `--screenshot=${OUT}`, url,
  ], 90_000);
  if (r.code !== 0) throw new Error(`chromium exited ${r.code}: ${r.stderrTail}`);
  console.log(`wrote ${OUT} (${(statSync(OUT).size / 1024).toFixed(0)} KiB)`);
} finally {
  rmSync(profile, { recursive: true, force: true });
  demo.kill('SIGINT');
}
