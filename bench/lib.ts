/** Benchmark plumbing: child processes, percentiles, /proc readings, SSE clients. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function sorted(xs: number[]): number[] {
  return Float64Array.from(xs).sort() as unknown as number[];
}

/**
 * The command line that runs `cmd` on the given CPUs (a taskset list such as "2-15"), or as
 * it is when none are given. taskset execs the command, so the child's pid is the command's
 * own, and its children (a cluster's workers, nginx's worker) inherit the CPUs.
 */
export function pinned(cmd: string, args: string[], cpus: string | undefined): [string, string[]] {
  return cpus ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
}

/** Spawns a process (on `cpus`, when given) and resolves when a line of its output matches `ready`. */
export function startProcess(cmd: string, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}, cpus?: string): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  return new Promise((resolve, reject) => {
    const [file, argv] = pinned(cmd, args, cpus);
    const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) {
        child.stdout!.off('data', onData);
        child.stderr!.off('data', onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve({ child, match: m });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${cmd} exited (${code}) before ready:\n${out}`)));
  });
}

/** utime+stime of a process (all threads), seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A process and its descendants (nginx's workers, a cluster's workers). */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let kids: string[] = [];
    try {
      kids = readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      /* gone */
    }
    out.push(...kids.map(Number));
  }
  return out;
}

/** utime+stime of a process and all its descendants, seconds (a process that is gone counts 0). */
export function treeCpuSeconds(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += cpuSeconds(p);
    } catch {
      /* exited between listing and reading */
    }
  }
  return sum;
}

export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** A port that was free a moment ago (nginx needs a number, not port 0). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** nginx as a plain streaming reverse proxy (the reference that measures nothing). */
export async function startNginx(upstreamPort: number, cpus?: string): Promise<{ port: number; pid: number; stop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-nginx-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
error_log ${dir}/error.log warn;
pid ${dir}/nginx.pid;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 512; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
`,
  );
  const [file, argv] = pinned('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], cpus);
  const child = spawn(file, argv, { stdio: 'inherit' });
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      await (await request(`http://127.0.0.1:${port}/v1/models`)).body.dump();
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`nginx did not start: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { port, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

/** CLOCK_MONOTONIC in ms: the same clock as bench/upstream.ts's stamps. */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface StreamSample {
  /** ms from request start to the first content chunk. */
  ttft: number;
  /**
   * The part of TTFT spent between client and upstream: request sent → upstream saw it,
   * plus first content chunk written → client read it (ms; -1 when unknown). TTFT minus
   * this is the upstream's own think time, which a proxy does not add to.
   */
  hop: number;
  /** One-way latency of each content chunk (receive − upstream send), ms. */
  oneWay: number[];
  chunks: number;
  ok: boolean;
}

/** The upstream's stamps: `: ts=<ms> [arr=<ms>]`, an SSE comment line before each content event. */
const TS = /^: ts=([0-9.]+)(?: arr=([0-9.]+))?$/gm;

export async function streamOnce(agent: Agent, base: string, body: string, collectOneWay: boolean, path = '/v1/chat/completions'): Promise<StreamSample> {
  const t0 = monoMs();
  const res = await request(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
  let ttft = -1;
  let hop = -1;
  const oneWay: number[] = [];
  let chunks = 0;
  for await (const c of res.body) {
    const now = monoMs();
    const text = (c as Buffer).toString('latin1');
    TS.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = TS.exec(text))) {
      chunks++;
      if (ttft < 0) {
        ttft = now - t0;
        if (m[2]) hop = Number(m[2]) - t0 + (now - Number(m[1]));
      }
      if (collectOneWay) oneWay.push(now - Number(m[1]));
    }
  }
  return { ttft, hop, oneWay, chunks, ok: res.statusCode === 200 };
}

/**
 * Closed loop: `concurrency` clients stream back to back for `durationMs`. With `spreadMs`,
 * client k starts k/concurrency of the way into that window, so the streams are spread
 * over time as in steady traffic instead of all starting (and, with equal stream lengths,
 * staying) in lockstep.
 */
export async function closedLoop(base: string, concurrency: number, durationMs: number, bodyFor: (i: number) => string, collectOneWay = true, spreadMs = 0, path = '/v1/chat/completions'): Promise<StreamSample[]> {
  const agent = new Agent({ connections: concurrency + 8, keepAliveTimeout: 30_000 });
  const out: StreamSample[] = [];
  const end = performance.now() + durationMs;
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, k) => {
      if (spreadMs > 0) await new Promise((r) => setTimeout(r, (k * spreadMs) / concurrency));
      while (performance.now() < end) out.push(await streamOnce(agent, base, bodyFor(i++), collectOneWay, path));
    }),
  );
  await agent.close();
  return out;
}
