/**
 * Stream health (docs/stream-health.md): every streamed generation request's ending named, and
 * its longest silence by phase. A reader of judged batches (metrics/consumer.ts); everything it
 * reads the proxy already put in the record: the outcome, whether the terminal event came, and
 * four silences, each a number per request, kept as the stream went.
 */
import { Counter, Histogram, type Gauge, type Registry } from 'prom-client';
import { gauge } from '../../lib/metric-def.js';
import type { BucketSet } from '../../lib/metric-def.js';
import type { JudgedBatch } from '../batch.js';
import type { BatchConsumer } from '../consumer.js';
import { apiLabelOf } from '../../record/routes.js';
import type { RequestRecord } from '../../record/record.js';
import { STREAM_METRICS, type SilencePhase, type StreamEnding } from './defs.js';

/**
 * A streamed request's ending; null for what is not a stream's ending: a request infermeter
 * refused (`rejected`) or one a lost worker took with it (`worker_lost`, counted from its starts).
 */
export function endingOf(r: Pick<RequestRecord, 'outcome' | 'terminal'>): StreamEnding | null {
  switch (r.outcome) {
    case 'ok':
      return r.terminal ? 'complete' : 'no_terminal_event';
    case 'client_abort':
      return 'client_abort';
    case 'upstream_timeout':
      return 'stalled';
    case 'upstream_error':
    case 'stream_error':
    case 'upstream_unreachable':
      return 'upstream_error';
    default:
      return null;
  }
}

export class StreamHealth implements BatchConsumer {
  readonly name = 'stream-health';
  private readonly endings: Counter;
  private readonly silence: Histogram;
  private readonly silent: Gauge;
  /** Models whose silent count was ever set: they read 0 once none is silent. */
  private readonly silentModels = new Set<string>();

  constructor(registry: Registry, buckets: Record<BucketSet, number[]>) {
    const [endings, silence, silent] = STREAM_METRICS;
    this.silent = gauge(registry, silent);
    this.endings = new Counter({ name: endings.name, help: endings.help, labelNames: [...endings.labels], registers: [registry] });
    this.silence = new Histogram({ name: silence.name, help: silence.help, labelNames: [...silence.labels], buckets: buckets[silence.buckets], registers: [registry] });
  }

  ingest(batch: JudgedBatch): void {
    if (batch.silentByModel) this.setSilent(batch.silentByModel);
    const { records, labels } = batch;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (!r.streamed) continue;
      const api = apiLabelOf(r.route);
      if (api === null) continue;
      const ending = endingOf(r);
      if (ending === null) continue;
      const model = labels[i]!;
      this.endings.inc({ gen_ai_request_model: model, api, ending });
      this.observe(model, api, 'before_first_token', r.silenceFirst);
      this.observe(model, api, 'reasoning', r.silenceReasoning);
      this.observe(model, api, 'tool_call', r.silenceTool);
      this.observe(model, api, 'content', r.silenceContent);
    }
  }

  private setSilent(by: ReadonlyMap<string, number>): void {
    for (const [model, n] of by) {
      this.silentModels.add(model);
      this.silent.set({ gen_ai_request_model: model }, n);
    }
    for (const model of this.silentModels) if (!by.has(model)) this.silent.set({ gen_ai_request_model: model }, 0);
  }

  private observe(model: string, api: string, phase: SilencePhase, seconds: number): void {
    if (seconds >= 0) this.silence.observe({ gen_ai_request_model: model, api, phase }, seconds);
  }
}
