/**
 * The known name nearest to a misspelt one, for "did you mean" hints (unknown config keys):
 * `metrics-listen` and `metrics_listen` find `metricsListen` (case and separators ignored),
 * a typo within a third of the name's length finds its word; anything further finds nothing.
 */
export function nearest(name: string, known: readonly string[]): string | null {
  const norm = (s: string) => s.toLowerCase().replace(/[-_.\s]/g, '');
  const n = norm(name);
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(n, norm(k));
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best !== null && bestDistance <= Math.max(1, Math.floor(n.length / 3)) ? best : null;
}

/** Levenshtein distance (two rows). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
