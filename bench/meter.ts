/**
 * node dist/bench/meter.js [ROUNDS] label=dir[,label=dir...] — the per-event metering path
 * alone (src/proxy/meter.ts's data handler: template, byte scan, full parse) of several builds,
 * in one process: every data line of llama-server's captured chat, Messages and Responses
 * streams (test/fixtures/) goes through a fresh RequestMeter per stream, as SseFramer hands
 * them over. The figure is this thread's CPU per event (process.threadCpuUsage is not in
 * Node 20, so process.cpuUsage: one thread runs here). The builds alternate within each round
 * and the order rotates; a busy machine takes CPU from all of them alike, and no sockets,
 * upstream or client share the measured time, so the spread is far below bench/ab.ts's.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './lib.js';

const [roundsArg = '7', list = `after=${ROOT}`] = process.argv.slice(2);
const rounds = Number(roundsArg);
if (!(rounds > 0)) throw new Error('usage: meter.js ROUNDS label=dir[,label=dir...]');

type Meter = { onData: (buf: Buffer, start: number, end: number) => unknown };
type MeterClass = new (t0: number, stripUsage: boolean, loop: undefined, api: string) => Meter;

/** One stream's data lines, each in its own buffer at an offset, as a read delivers it. */
function events(file: string): Buffer[] {
  const text = readFileSync(resolve(ROOT, 'test/fixtures', file), 'utf8');
  return text.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => Buffer.from(`data: ${l.slice(6)}\n`));
}
const STREAMS: [string, Buffer[]][] = [
  ['chat', events('llama-server-chat-stream.sse')],
  ['messages', events('llama-server-messages-stream.sse')],
  ['responses', events('llama-server-responses-stream.sse')],
];

const builds: { label: string; Meter: MeterClass; per: Map<string, number[]> }[] = [];
for (const entry of list.split(',')) {
  const at = entry.indexOf('=');
  if (at <= 0) throw new Error(`expected label=dir, got "${entry}"`);
  const mod = (await import(pathToFileURL(resolve(entry.slice(at + 1), 'dist/src/proxy/meter.js')).href)) as { RequestMeter: MeterClass };
  builds.push({ label: entry.slice(0, at), Meter: mod.RequestMeter, per: new Map(STREAMS.map(([api]) => [api, []])) });
}

/** CPU ns per event over `n` streams of this API. */
function run(Meter: MeterClass, api: string, evs: Buffer[], n: number): number {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const m = new Meter(0, true, undefined, api);
    for (const b of evs) m.onData(b, 6, b.length - 1);
  }
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1000) / (n * evs.length);
}

const N = 20_000;
for (let w = 0; w < 2; w++) for (const b of builds) for (const [api, evs] of STREAMS) run(b.Meter, api, evs, N);
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < builds.length; i++) {
    const b = builds[(i + r) % builds.length]!;
    for (const [api, evs] of STREAMS) b.per.get(api)!.push(run(b.Meter, api, evs, N));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const first = builds[0]!;
console.log(`CPU ns per event through RequestMeter.onData (a fresh meter per stream, ${N} streams per cell), ${rounds} rounds, order rotating`);
console.log(`API            | build        | ns/event | × ${first.label} (paired rounds: median [min .. max]) | per round ns/event`);
for (const [api, evs] of STREAMS) {
  for (const b of builds) {
    const xs = b.per.get(api)!;
    const paired = xs.map((x, i) => x / first.per.get(api)![i]!);
    console.log(`${`${api} (${evs.length} events)`.padEnd(14)} | ${b.label.padEnd(12)} | ${median(xs).toFixed(0).padStart(8)} | ${median(paired).toFixed(3)} [${Math.min(...paired).toFixed(3)} .. ${Math.max(...paired).toFixed(3)}] | ${xs.map((x) => x.toFixed(0)).join(' ')}`);
  }
}
