import { pino, type Logger } from 'pino';

/**
 * The one logger factory. Redaction is a backstop: infermeter never logs bodies, and never
 * logs request headers, so prompts, completions and Authorization never reach a log line.
 */
export function createLogger(level: string, name = 'infermeter', destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.authorization', 'authorization'], censor: '[redacted]' },
    },
    destination as never,
  );
}
