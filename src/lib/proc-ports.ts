/**
 * Which processes serve a local TCP port, from /proc: the listening sockets of
 * /proc/net/tcp{,6} (by inode), the processes holding those sockets (/proc/<pid>/fd links
 * `socket:[inode]`), and every descendant of those processes (/proc/<pid>/stat's ppid).
 * An engine's GPU context is often held by a child of the process that listens (vLLM's
 * EngineCore and tensor-parallel workers, llama-server's own process), hence the tree.
 *
 * The parsers are pure functions over the files' text; `readProcTable` is the only I/O.
 * Reading another user's fds needs the same user or CAP_SYS_PTRACE (root in a container
 * with hostPID); a process it cannot read is skipped, so attribution then finds nothing.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';

const TCP_LISTEN = '0A';

export interface ListeningSocket {
  port: number;
  inode: number;
}

/** The LISTEN rows of /proc/net/tcp or /proc/net/tcp6 (header line skipped; malformed lines ignored). */
export function parseProcNetTcp(text: string): ListeningSocket[] {
  const out: ListeningSocket[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    if (f.length < 10 || f[3] !== TCP_LISTEN) continue;
    const colon = f[1]!.lastIndexOf(':');
    if (colon < 0) continue;
    const port = parseInt(f[1]!.slice(colon + 1), 16);
    const inode = Number(f[9]);
    if (Number.isInteger(port) && Number.isInteger(inode) && inode > 0) out.push({ port, inode });
  }
  return out;
}

/** The inode of an fd link such as `socket:[123456]`; null for anything else. */
export function socketInode(link: string): number | null {
  const m = /^socket:\[(\d+)\]$/.exec(link);
  return m ? Number(m[1]) : null;
}

/** The parent pid from /proc/<pid>/stat; the command name may hold spaces and parentheses. */
export function parseStatPpid(stat: string): number | null {
  const close = stat.lastIndexOf(')');
  if (close < 0) return null;
  const ppid = Number(stat.slice(close + 2).split(' ')[1]);
  return Number.isInteger(ppid) ? ppid : null;
}

/** What attribution needs of one process. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  sockets: number[];
}

/** The pids that listen on `port` and all their descendants (empty when nobody listens, or nobody readable does). */
export function processTreeOnPort(port: number, listening: readonly ListeningSocket[], procs: readonly ProcEntry[]): Set<number> {
  const inodes = new Set(listening.filter((s) => s.port === port).map((s) => s.inode));
  const tree = new Set<number>();
  if (inodes.size === 0) return tree;
  for (const p of procs) if (p.sockets.some((i) => inodes.has(i))) tree.add(p.pid);
  const children = new Map<number, number[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const queue = [...tree];
  while (queue.length > 0) {
    for (const c of children.get(queue.pop()!) ?? []) {
      if (!tree.has(c)) {
        tree.add(c);
        queue.push(c);
      }
    }
  }
  return tree;
}

/** Reads /proc (or a copy of it, for tests): listening sockets and every readable process. */
export async function readProcTable(root = '/proc'): Promise<{ listening: ListeningSocket[]; procs: ProcEntry[] }> {
  const listening: ListeningSocket[] = [];
  for (const file of ['net/tcp', 'net/tcp6']) {
    listening.push(...parseProcNetTcp(await readFile(`${root}/${file}`, 'utf8').catch(() => '')));
  }
  const procs: ProcEntry[] = [];
  for (const name of await readdir(root).catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = parseStatPpid(await readFile(`${root}/${name}/stat`, 'utf8').catch(() => ''));
    if (ppid === null) continue;
    procs.push({ pid: Number(name), ppid, sockets: await socketsOf(`${root}/${name}/fd`) });
  }
  return { listening, procs };
}

async function socketsOf(fdDir: string): Promise<number[]> {
  const out: number[] = [];
  for (const fd of await readdir(fdDir).catch(() => [] as string[])) {
    const inode = socketInode(await readlink(`${fdDir}/${fd}`).catch(() => ''));
    if (inode !== null) out.push(inode);
  }
  return out;
}
