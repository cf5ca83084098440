/**
 * Durations in generated rules. Production rules use the standard SRE-workbook windows;
 * `--test-windows` divides every window and `for:` by 60 (1h becomes 1m) so that an
 * end-to-end test sees an alert go pending within seconds instead of hours.
 */

export const STANDARD_WINDOWS = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'] as const;
export type StandardWindow = (typeof STANDARD_WINDOWS)[number];

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

export function windowSeconds(window: string): number {
  const m = /^(\d+)([smhdw])$/.exec(window);
  if (!m) throw new Error(`expected a Prometheus duration such as 5m, got "${window}"`);
  return Number(m[1]) * UNIT_SECONDS[m[2]!]!;
}

/** Seconds as the shortest Prometheus duration that states them exactly (90 → "90s", 3600 → "1h"). */
export function promDuration(seconds: number): string {
  if (!Number.isInteger(seconds) || seconds <= 0) throw new Error(`cannot state ${seconds}s as a Prometheus duration`);
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNIT_SECONDS[unit]!;
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/** Maps a nominal window ("1h") to the one the generated rules use. */
export type WindowScale = (window: string) => string;

export const standardScale: WindowScale = (w) => promDuration(windowSeconds(w));
export const testScale: WindowScale = (w) => promDuration(Math.max(1, Math.round(windowSeconds(w) / 60)));
