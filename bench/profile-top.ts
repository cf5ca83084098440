/**
 * node dist/bench/profile-top.js FILE.cpuprofile [N] — the N (default 25) functions with the
 * most self time in a V8 CPU profile (`node --cpu-prof`), as shares of the sampled time, and
 * the share per source file. For reading where a thread's CPU goes (docs/performance.md,
 * "Under contention").
 */
import { readFileSync } from 'node:fs';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const [file, n = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-top.js FILE.cpuprofile [N]');
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const self = new Map<string, number>();
const perFile = new Map<string, number>();
let total = 0;
p.samples.forEach((id, i) => {
  const dt = p.timeDeltas[i] ?? 0;
  const f = byId.get(id)!.callFrame;
  const where = f.url.replace(/^.*\/(node_modules\/[^/]+|dist\/src)\//, '$1/').replace(/^node:/, 'node:');
  const key = `${f.functionName || '(anonymous)'} ${where || ''}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  const group = f.url === '' ? f.functionName : where.startsWith('node_modules/') ? where.split('/').slice(0, 2).join('/') : where;
  perFile.set(group, (perFile.get(group) ?? 0) + dt);
  total += dt;
});
const pct = (x: number) => `${((x / total) * 100).toFixed(1).padStart(5)} %`;
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
console.log('self time by function:');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`  ${pct(v)}  ${k}`);
console.log('self time by file (node_modules by package; (program), (garbage collector), (idle) as V8 names them):');
for (const [k, v] of [...perFile].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${pct(v)}  ${k}`);
