import { tpotSeconds, type RequestRecord } from '../metrics/record.js';
import { SLO_NAMES, thresholdsFor, type SloConfig, type SloName } from './config.js';

export interface Verdict {
  slo: SloName;
  good: boolean;
}

/**
 * Judges one finished generation request against every threshold that applies to its model.
 * A request that failed (upstream error, stream error, timeout, unreachable) is bad on every
 * SLO: it met none of them. A client abort or a request infermeter rejected is not judged.
 * Returns null when nothing applies.
 */
export function judge(slos: SloConfig, modelLabel: string, r: RequestRecord): Verdict[] | null {
  if (r.outcome === 'client_abort' || r.outcome === 'rejected') return null;
  const t = thresholdsFor(slos, modelLabel);
  const verdicts: Verdict[] = [];
  const measured: Record<SloName, number> = { ttft: r.ttft, ttfo: r.ttfo, tpot: tpotSeconds(r), e2e: r.e2e };
  for (const slo of SLO_NAMES) {
    const limit = t[slo];
    if (limit === undefined) continue;
    if (r.outcome !== 'ok') {
      verdicts.push({ slo, good: false });
      continue;
    }
    const value = measured[slo];
    if (value < 0) continue; // not observable for this request (non-streaming, < 2 tokens)
    verdicts.push({ slo, good: value <= limit });
  }
  return verdicts.length > 0 ? verdicts : null;
}
