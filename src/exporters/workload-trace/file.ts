/**
 * The trace's files (docs/workload-trace.md, "Files"): FILE being written, FILE.1 ... FILE.n
 * rotated by size and count like a log, each with its sidecar FILE[.n].meta.json, rewritten
 * whole (a temporary file renamed) so a reader never sees half of one.
 *
 * Writes are synchronous and on the metrics thread, a batch of lines at a time: small, in
 * order, and never on the proxy's loop. The first write that fails (a full disk, a file size
 * limit) ends the trace: the file is closed, the caller logs one line, the proxy goes on.
 */
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import type { SkipReason } from '../../metrics/prompt/blocks.js';

/** What the sidecar says of the whole trace (the same in every file of one run). */
export interface TraceFacts {
  format: 'infermeter-workload-trace';
  format_version: 1;
  infermeter_version: string;
  start_unix_ms: number;
  start_time: string;
  block_size: number;
  chars_per_token: number;
  hash: 'sha256-53-salted';
  cut: Record<string, { cut: 'tokens' | 'chars'; tokenizer: string | null }>;
  sample: number;
  /**
   * Each upstream's KV cache as its engine last reported it (the engine collector's scrape), by
   * upstream name: what `trace stats` models a cache of the engine's size with. An upstream
   * whose engine never reported its cache is absent.
   */
  engines: Record<string, SidecarEngine>;
}

export interface SidecarEngine {
  engine: string;
  block_size: number | null;
  cache_tokens: number | null;
  prefix_caching: boolean | null;
}

/** What the sidecar says of its own file. */
interface FileCounts {
  requests: number;
  lines: number;
  skipped: Record<SkipReason, number>;
  first_timestamp: number | null;
  last_timestamp: number | null;
}

const fresh = (): FileCounts => ({ requests: 0, lines: 0, skipped: { sampled: 0, busy: 0, unreadable: 0 }, first_timestamp: null, last_timestamp: null });

export class TraceFiles {
  private fd: number | null = null;
  private size = 0;
  private counts = fresh();
  /** Lines written since open, all files together. */
  linesWritten = 0;

  constructor(
    private readonly path: string,
    private readonly maxBytes: number,
    private readonly maxFiles: number,
    private readonly facts: () => TraceFacts,
  ) {}

  /** Opens FILE for a new trace; a non-empty FILE left by an earlier run is rotated away first. Throws when it cannot. */
  open(): void {
    if ((statSync(this.path, { throwIfNoEntry: false })?.size ?? 0) > 0) this.rotateAway();
    this.fd = openSync(this.path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
    this.writeSidecar(this.path, false);
  }

  get writing(): boolean {
    return this.fd !== null;
  }

  /** A request seen (whether written or not). */
  seen(skipped: SkipReason | null): void {
    this.counts.requests++;
    if (skipped) this.counts.skipped[skipped]++;
  }

  /**
   * Appends lines (each without its newline), rotating first whenever the next line would take
   * FILE past its limit. Throws on the first failed write, with the trace closed.
   */
  append(lines: readonly { text: string; timestamp: number }[]): void {
    if (this.fd === null || lines.length === 0) return;
    let chunk: { text: string; timestamp: number }[] = [];
    let bytes = 0;
    for (const line of lines) {
      const n = Buffer.byteLength(line.text) + 1;
      if (this.size + bytes + n > this.maxBytes && this.size + bytes > 0) {
        this.writeLines(chunk);
        chunk = [];
        bytes = 0;
        this.rotate();
      }
      chunk.push(line);
      bytes += n;
    }
    this.writeLines(chunk);
  }

  /** Writes lines and counts them once they are on file. */
  private writeLines(lines: readonly { text: string; timestamp: number }[]): void {
    if (lines.length === 0) return;
    this.write(lines.map((l) => l.text + '\n').join(''));
    this.linesWritten += lines.length;
    const c = this.counts;
    for (const { timestamp } of lines) {
      c.lines++;
      c.first_timestamp = c.first_timestamp === null ? timestamp : Math.min(c.first_timestamp, timestamp);
      c.last_timestamp = c.last_timestamp === null ? timestamp : Math.max(c.last_timestamp, timestamp);
    }
  }

  /** Rewrites the sidecar of the file being written (the periodic refresh). */
  refresh(): void {
    if (this.fd !== null) this.writeSidecar(this.path, false);
  }

  /** Closes FILE, its sidecar marked closed. */
  close(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    try {
      this.writeSidecar(this.path, true);
    } catch {
      // The lines are what matter; a sidecar that cannot be written now keeps its last version.
    }
  }

  /**
   * Writes whole lines or none: a short write (a file size limit reached mid-chunk) is followed
   * to its end, and when that fails the file is cut back to its last whole line, so a reader
   * never meets half a line at the end of a trace that stopped.
   */
  private write(chunk: string): void {
    const fd = this.fd!;
    const bytes = Buffer.from(chunk);
    let done = 0;
    try {
      while (done < bytes.length) done += writeSync(fd, bytes, done);
      this.size += done;
    } catch (err) {
      try {
        if (done > 0) ftruncateSync(fd, this.size);
      } catch {
        // What is left is the lines before, and part of one: readers skip a last line without its newline.
      }
      closeSync(fd);
      this.fd = null;
      throw err;
    }
  }

  private rotate(): void {
    closeSync(this.fd!);
    this.fd = null;
    this.writeSidecar(this.path, true);
    this.rotateAway();
    this.counts = fresh();
    this.fd = openSync(this.path, 'a', 0o640);
    this.size = 0;
    this.writeSidecar(this.path, false);
  }

  /** FILE.n → FILE.n+1 (the oldest beyond the limit goes), FILE → FILE.1; sidecars with them. */
  private rotateAway(): void {
    const name = (n: number) => (n === 0 ? this.path : `${this.path}.${n}`);
    const drop = (n: number) => {
      rmSync(name(n), { force: true });
      rmSync(sidecarOf(name(n)), { force: true });
    };
    if (this.maxFiles <= 1) return drop(0);
    drop(this.maxFiles - 1);
    for (let n = this.maxFiles - 2; n >= 0; n--) {
      if (existsSync(name(n))) renameSync(name(n), name(n + 1));
      if (existsSync(sidecarOf(name(n)))) renameSync(sidecarOf(name(n)), sidecarOf(name(n + 1)));
    }
  }

  private writeSidecar(file: string, closed: boolean): void {
    const c = this.counts;
    const body = { ...this.facts(), ...c, kept_ratio: c.requests === 0 ? 1 : c.lines / c.requests, closed };
    const tmp = `${sidecarOf(file)}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(body, null, 2) + '\n', { mode: 0o640 });
    renameSync(tmp, sidecarOf(file));
  }
}

export function sidecarOf(file: string): string {
  return `${file}.meta.json`;
}
