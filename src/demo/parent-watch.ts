/**
 * Tells a foreground command (the demo) that whoever started it went away, so that it stops
 * its children instead of living on as an orphan holding its ports: `timeout 20 npm run demo`
 * kills npm and its shell, which do not pass the signal on; a closed terminal sends SIGHUP; a
 * parent that talks to it over a pipe closes that pipe. Three signs, any one is enough:
 * SIGHUP, stdin (when it is a pipe or socket) reaching its end, and the parent process id
 * changing (the process was re-parented to init or a subreaper).
 * A TTY or /dev/null on stdin is not watched: `npm run demo </dev/null` must keep running.
 */
import { fstatSync } from 'node:fs';

export type ParentGone = 'SIGHUP' | 'stdin closed' | 'parent exited';

const POLL_MS = 200;

/** Calls `gone` once, with the first sign seen; returns a function that stops watching. */
export function watchParent(gone: (why: ParentGone) => void): () => void {
  let fired = false;
  const fire = (why: ParentGone) => {
    if (fired) return;
    fired = true;
    stop();
    gone(why);
  };
  const onHup = () => fire('SIGHUP');
  process.on('SIGHUP', onHup);
  const ppid = process.ppid;
  const poll = setInterval(() => {
    if (process.ppid !== ppid) fire('parent exited');
  }, POLL_MS);
  poll.unref();
  const onEnd = () => fire('stdin closed');
  const stdinWatched = stdinIsPipe();
  if (stdinWatched) {
    process.stdin.on('end', onEnd);
    process.stdin.on('close', onEnd);
    process.stdin.resume(); // whatever arrives is dropped; only the end matters
  }
  function stop(): void {
    process.off('SIGHUP', onHup);
    clearInterval(poll);
    if (stdinWatched) {
      process.stdin.off('end', onEnd);
      process.stdin.off('close', onEnd);
      process.stdin.pause();
    }
  }
  return stop;
}

function stdinIsPipe(): boolean {
  try {
    const s = fstatSync(0);
    return s.isFIFO() || s.isSocket();
  } catch {
    return false;
  }
}
