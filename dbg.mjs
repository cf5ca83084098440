import { spawn } from 'node:child_process';
import { Agent } from 'undici';
import { streamOnce } from './dist/bench/lib.js';
import { startInfermeterProcess } from './dist/test/faults/harness.js';
const up = spawn(process.execPath, ['dist/bench/upstream.js'], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve) => up.stdout.once('data', (d) => resolve(Number(d.toString().trim()))));
const direct = process.argv[3] === 'direct';
const im = await startInfermeterProcess(`http://127.0.0.1:${port}`, ['--upstream-connections', '12000']);
const target = direct ? `http://127.0.0.1:${port}` : im.url;
const agent = new Agent({ connections: 12000 });
const N = Number(process.argv[2]);
const body = (i) => JSON.stringify({ model: 'bench-model-0', stream: true, messages: [{ role: 'user', content: String(i) }], bench: { firstMs: 50, chunks: 4, gapMs: 1500 } });
const all = [];
for (let i = 0; i < N; i += 500) { for (let j = i; j < Math.min(N, i + 500); j++) all.push(streamOnce(agent, target, body(j), false).catch((e) => ({ err: e.code ?? e.message }))); await new Promise(r => setTimeout(r, 100)); }
const res = await Promise.all(all);
const errs = {}; for (const r of res) if (r.err || !r.ok) errs[r.err ?? 'status'] = (errs[r.err ?? 'status'] ?? 0) + 1;
console.log(N, direct ? 'direct' : 'proxied', 'errors', errs);
console.log(im.log().split('\n').filter(l => !l.includes('"level":30')).slice(0, 5).join('\n'));
await agent.close(); await im.stop(); up.kill();
