/**
 * npm run test:faults: runs the fault suite (test/faults) and prints one table: scenario,
 * requests, bytes compared, anomalies, peak RSS, open descriptors before/after.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../test/faults/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.test.js')).map((f) => dir + f);
const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (d: Buffer) => {
  out += d.toString();
  process.stdout.write(d);
});
child.on('exit', (code) => {
  const rows = [...out.matchAll(/FAULT-ROW (\{.*\})/g)].map((m) => JSON.parse(m[1]!) as Record<string, string | number>);
  const cols = ['scenario', 'requests', 'bytesCompared', 'anomalies', 'peakRssMiB', 'fdsBefore', 'fdsAfter'];
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width[i]!)).join(' | ')} |`;
  console.log('\n' + line(cols));
  console.log(line(width.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(cols.map((c) => String(r[c]))));
  process.exit(code ?? 1);
});
