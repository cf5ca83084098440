import { tpotSeconds, type RequestRecord } from '../record/record.js';
import { SLO_NAMES, promptClassFor, sloLabel, thresholdsFor, type SloConfig, type SloName } from './config.js';

export interface Verdict {
  /** The `slo` label: the SLO's name, or its name and prompt class (config.ts sloLabel). */
  slo: string;
  /** The SLO itself (ttft, tpot, ...), whichever threshold judged it. */
  name: SloName;
  good: boolean;
}

/**
 * Judges one finished generation request against every threshold that applies to its model,
 * or to its prompt class where the config gives that class its own threshold (issue 17).
 * A request that failed (upstream error, stream error, timeout, unreachable) is bad on every
 * SLO: it met none of them. A client abort or a request infermeter rejected is not judged.
 * Returns null when nothing applies.
 */
export function judge(slos: SloConfig, modelLabel: string, r: RequestRecord): Verdict[] | null {
  if (r.outcome === 'client_abort' || r.outcome === 'rejected') return null;
  const t = thresholdsFor(slos, modelLabel);
  // With no classes promptClassFor finds none either: the length test only skips the call
  // (mutation testing: equivalent).
  const cls = r.inputTokensKnown && slos.promptClasses.length > 0 ? promptClassFor(slos, r.inputTokens) : null;
  const verdicts: Verdict[] = [];
  const measured = { ttft: r.ttft, ttfo: r.ttfo, tpot: tpotSeconds(r), e2e: r.e2e };
  for (const name of SLO_NAMES) {
    const own = cls?.thresholds[name];
    const limit = own ?? t[name];
    if (limit === undefined) continue;
    const slo = own === undefined ? name : sloLabel(name, cls!.promptTokensLe);
    if (r.outcome !== 'ok') {
      verdicts.push({ slo, name, good: false });
      continue;
    }
    const value = measured[name];
    if (value < 0) continue; // not observable for this request (non-streaming, < 2 tokens)
    verdicts.push({ slo, name, good: value <= limit });
  }
  return verdicts.length > 0 ? verdicts : null;
}
