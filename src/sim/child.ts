/**
 * Runs the simulator as its own process (`infermeter simulate ...`), so a benchmark or a
 * test does not share its event loop with the server it measures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface SimulatorProcess {
  url: string;
  port: number;
  child: ChildProcess;
  close(): Promise<void>;
}

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));

/** `args` are simulate flags; pass `--listen 127.0.0.1:0` for a free port (the default is 8000). */
export function spawnSimulator(args: readonly string[], timeoutMs = 10_000): Promise<SimulatorProcess> {
  const child = spawn(process.execPath, [CLI, 'simulate', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => fail(new Error(`simulator did not start within ${timeoutMs} ms: ${err}`)), timeoutMs);
    const fail = (e: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(e);
    };
    child.once('exit', (code) => fail(new Error(`simulator exited with ${code}: ${err}`)));
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      err += text;
      const m = / at (http:\/\/\S+:(\d+)) /.exec(err);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stderr!.removeAllListeners('data').resume();
      resolve({
        url: m[1]!,
        port: Number(m[2]),
        child,
        close: () => new Promise((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGTERM');
        }),
      });
    });
  });
}
