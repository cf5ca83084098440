/**
 * The prompt block hashing, once per request, for every reader of prompt shapes (the workload
 * trace, exporters/workload-trace/; the prefix-cache model): a consumer of the judged batch
 * that takes the batch's request bodies (record/input.ts) to its own thread (hash-thread.ts)
 * and hands each reader the requests with their chains of prefix ids (lib/block-hash.ts).
 *
 * Readers subscribe with the block size they cut at and the share of requests they want: the
 * chain is cut once, at the greatest common divisor of their block sizes, so each reads its own
 * blocks from the same chain (blockIds, fullBlockIds). Each request gets one uniform draw; it is
 * hashed when some reader's share is above the draw, and a reader keeps it when its own is.
 *
 * Never a delay: when the hashing thread has more queued than MAX_QUEUED_JOBS requests or
 * MAX_QUEUED_BYTES of bodies, a request is not hashed but delivered as skipped `busy`, at once.
 * Readers count what they were handed and what they kept; nothing here waits on them.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { commonUnit, type PromptBlocks } from '../../lib/block-hash.js';
import type { RequestRecord } from '../../record/record.js';
import type { RequestInput } from '../../record/input.js';
import { routeByLabel } from '../../record/routes.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import type { JudgedBatch } from '../batch.js';
import type { BatchConsumer } from '../consumer.js';
import type { FromHasher, HashJob, HashResult, HasherData, ToHasher } from './hash-protocol.js';
import type { PromptOptions } from './options.js';

export const MAX_QUEUED_JOBS = 256;
export const MAX_QUEUED_BYTES = 32 << 20;

/** Why a request reached a reader without blocks. */
export type SkipReason = 'sampled' | 'busy' | 'unreadable';

export interface HashedRequest {
  readonly record: RequestRecord;
  /** Its model label (the batch's, looked up once). */
  readonly label: string;
  /** The chain of prefix ids; null when it was not hashed (`skipped` says why). */
  readonly blocks: PromptBlocks | null;
  readonly skipped: SkipReason | null;
  /** Uniform in [0, 1): a reader keeps the request when draw < its own share. */
  readonly draw: number;
  /** The output limit the client asked for; null when none (or not read). */
  readonly maxTokens: number | null;
  /** The client asked for a stream; null when the body was not read. */
  readonly stream: boolean | null;
  /** The session header's value, hashed; null when none. */
  readonly session: string | null;
  /** Where the tokenizer came from when the prompt was cut as tokens by one (a path); null otherwise. */
  readonly tokenizer: string | null;
}

export interface PromptReader {
  /** Tokens per block it reads; read again at each batch (it may change, as an engine's block size is learned). */
  readonly blockTokens: number;
  /** The share of requests it wants (0 to 1). */
  readonly sample: number;
  /** Requests in the order they are ready: skipped ones at once, hashed ones as the thread answers. */
  read(requests: readonly HashedRequest[]): void;
}

export interface PromptBlocksSettings extends PromptOptions {
  upstreams: readonly UpstreamSpec[];
}

type Pending = Pick<HashedRequest, 'record' | 'label' | 'draw'> & { bytes: number };

export class PromptBlocksStage implements BatchConsumer {
  readonly name = 'prompt-blocks';
  private readonly readers: PromptReader[] = [];
  private worker: Worker | null = null;
  private broken = false;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  private queuedBytes = 0;
  private drained: (() => void) | null = null;
  /** Hashing thread wall time and requests hashed, since start (for the bench and tests). */
  readonly spent = { seconds: 0, requests: 0 };

  constructor(
    private readonly opts: PromptBlocksSettings,
    private readonly log: Logger,
  ) {}

  subscribe(reader: PromptReader): void {
    this.readers.push(reader);
  }

  start(): void {
    const data: HasherData = { salt: this.opts.promptHashSalt, charsPerToken: this.opts.promptCharsPerToken, tokenizers: this.opts.tokenizers, hfHubCache: this.opts.hfHubCache };
    const worker = new Worker(new URL('./hash-thread.js', import.meta.url), { workerData: data });
    worker.unref();
    worker.on('message', (msg: FromHasher) => {
      if (msg.type === 'done') this.answered(msg.results);
      else this.log.warn({ path: msg.path, err: msg.error }, 'tokenizer unusable: its prompts are cut from characters');
    });
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => {
      if (!this.broken && this.worker) this.fail(new Error(`exited with code ${code}`));
    });
    this.worker = worker;
  }

  ingest(batch: JudgedBatch): void {
    const inputs = batch.inputs;
    if (!inputs || this.readers.length === 0) return;
    const want = Math.max(...this.readers.map((r) => r.sample));
    const now: HashedRequest[] = [];
    const jobs: { job: HashJob; body: Uint8Array }[] = [];
    let size = 0;
    inputs.forEach((input, i) => {
      if (!input) return;
      const record = batch.records[i]!;
      const api = routeByLabel(record.route).api;
      if (api === null) return;
      const base = { record, label: batch.labels[i]!, draw: Math.random() };
      const skip = (skipped: SkipReason) => now.push({ ...base, blocks: null, skipped, maxTokens: null, stream: null, session: null, tokenizer: null });
      if (base.draw >= want) return skip('sampled');
      const bytes = input.body.byteLength;
      if (this.broken || !this.worker || this.pending.size >= MAX_QUEUED_JOBS || this.queuedBytes + size + bytes > MAX_QUEUED_BYTES) return skip('busy');
      const id = this.nextId++;
      this.pending.set(id, { ...base, bytes });
      jobs.push({ job: this.job(id, api, record, input, size), body: input.body });
      size += bytes;
    });
    if (jobs.length > 0) this.send(jobs, size);
    if (now.length > 0) this.deliver(now);
  }

  private job(id: number, api: HashJob['api'], record: RequestRecord, input: RequestInput, start: number): HashJob {
    return { id, api, model: record.model, upstream: this.opts.upstreams[record.upstream]?.name ?? null, start, end: start + input.body.byteLength, session: input.session };
  }

  private send(jobs: { job: HashJob; body: Uint8Array }[], size: number): void {
    const bytes = new Uint8Array(size);
    for (const { job, body } of jobs) bytes.set(body, job.start);
    this.queuedBytes += size;
    const msg: ToHasher = { jobs: jobs.map((j) => j.job), bytes: bytes.buffer, unit: commonUnit(this.readers.map((r) => r.blockTokens)) };
    this.worker!.postMessage(msg, [bytes.buffer]);
  }

  private answered(results: HashResult[]): void {
    const out: HashedRequest[] = [];
    for (const r of results) {
      const p = this.pending.get(r.id);
      if (!p) continue;
      this.pending.delete(r.id);
      this.queuedBytes -= p.bytes;
      this.spent.seconds += r.seconds;
      this.spent.requests++;
      out.push({ record: p.record, label: p.label, draw: p.draw, blocks: r.blocks, skipped: r.blocks ? null : 'unreadable', maxTokens: r.maxTokens, stream: r.stream, session: r.session, tokenizer: r.tokenizer });
    }
    this.deliver(out);
    if (this.pending.size === 0) this.drained?.();
  }

  private deliver(requests: HashedRequest[]): void {
    if (requests.length === 0) return;
    for (const reader of this.readers) {
      try {
        reader.read(requests);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'a prompt reader failed');
      }
    }
  }

  /** The thread died: what it held is skipped as busy, and so is everything from now on. */
  private fail(err: Error): void {
    if (this.broken) return;
    this.broken = true;
    this.log.error({ err: err.message }, 'prompt hashing thread failed: prompt blocks are off until restart');
    const lost = [...this.pending.values()].map((p): HashedRequest => ({ record: p.record, label: p.label, draw: p.draw, blocks: null, skipped: 'busy', maxTokens: null, stream: null, session: null, tokenizer: null }));
    this.pending.clear();
    this.queuedBytes = 0;
    this.deliver(lost);
    this.drained?.();
  }

  /** Waits (up to 5 s) for what the thread still holds, hands it to the readers, then ends the thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    if (this.pending.size > 0 && !this.broken) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 5000);
        this.drained = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    this.worker = null;
    await worker.terminate();
  }
}
