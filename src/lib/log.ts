import { pino, type Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Every logger of one createLogger family (the root and its children), for a live level change. */
const FAMILY = Symbol('infermeter.logFamily');
type Family = Set<WeakRef<Logger>>;

/**
 * The one logger factory. Redaction is a backstop: infermeter never logs bodies, and never
 * logs request headers, so prompts, completions and Authorization never reach a log line.
 */
export function createLogger(level: string, name = 'infermeter', destination?: NodeJS.WritableStream): Logger {
  const family: Family = new Set();
  const join = (l: Logger) => {
    family.add(new WeakRef(l));
    (l as unknown as Record<symbol, Family>)[FAMILY] = family;
  };
  const root = pino(
    {
      name,
      level,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.authorization', 'authorization', 'req.headers["x-api-key"]', 'headers["x-api-key"]', '*["x-api-key"]'], censor: '[redacted]' },
      // A child takes its parent's level when it is made and keeps it: a reload reaches it through the family.
      onChild: join,
    },
    destination as never,
  );
  join(root);
  return root;
}

/** Sets the level of `log` and of every logger made with or from the same createLogger root. */
export function setLogLevel(log: Logger, level: string): void {
  const family = (log as unknown as Record<symbol, Family | undefined>)[FAMILY];
  if (!family) {
    log.level = level;
    return;
  }
  for (const ref of family) {
    const l = ref.deref();
    if (l) l.level = level;
    else family.delete(ref);
  }
}
