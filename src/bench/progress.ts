/**
 * Progress on stderr: a redrawn bar on a terminal; on anything else (CI logs, files) a plain
 * line when a phase starts and ends and at most every few seconds, so logs stay readable.
 */

export interface Progress {
  phase(label: string): void;
  /** fraction in [0, 1]; detail: a short live figure (done, in flight). */
  update(fraction: number, detail: string): void;
  done(summary: string): void;
  close(): void;
}

export function createProgress(stream: NodeJS.WriteStream = process.stderr, plainEveryMs = 10_000): Progress {
  return stream.isTTY ? ttyProgress(stream) : plainProgress(stream, plainEveryMs);
}

export function silentProgress(): Progress {
  return { phase() {}, update() {}, done() {}, close() {} };
}

const WIDTH = 28;

function bar(fraction: number): string {
  const f = Math.max(0, Math.min(1, fraction));
  const full = Math.round(f * WIDTH);
  return `[${'#'.repeat(full)}${'.'.repeat(WIDTH - full)}] ${String(Math.round(f * 100)).padStart(3)}%`;
}

function ttyProgress(stream: NodeJS.WriteStream): Progress {
  let label = '';
  let last = 0;
  const draw = (text: string) => stream.write(`\r\x1b[2K${text.slice(0, (stream.columns || 100) - 1)}`);
  return {
    phase(l) {
      label = l;
      draw(`${label} ${bar(0)}`);
    },
    update(fraction, detail) {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      draw(`${label} ${bar(fraction)} ${detail}`);
    },
    done(summary) {
      stream.write(`\r\x1b[2K${label}: ${summary}\n`);
    },
    close() {},
  };
}

function plainProgress(stream: NodeJS.WriteStream, everyMs: number): Progress {
  let label = '';
  let last = 0;
  return {
    phase(l) {
      label = l;
      last = Date.now();
      stream.write(`${label}: started\n`);
    },
    update(fraction, detail) {
      const now = Date.now();
      if (now - last < everyMs) return;
      last = now;
      stream.write(`${label}: ${Math.round(fraction * 100)}% ${detail}\n`);
    },
    done(summary) {
      stream.write(`${label}: ${summary}\n`);
    },
    close() {},
  };
}
