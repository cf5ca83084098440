/**
 * Turns a sequence's tokens into what the client receives: SSE chunks as they are
 * generated, or one JSON body at the end. The text comes from the request's own PRNG, so
 * the same seed and prompt give the same reply whatever else the server is doing.
 */
import type { ServerResponse } from 'node:http';
import {
  DONE_EVENT, metricsTail, streamErrorEvent, usageJson, type Collected, type Kind, type PerRequestTiming, type StreamFormat, type Usage,
} from './chunks.js';
import type { SeqSink } from './engine.js';
import { nextToken, TOKENS } from './text.js';
import type { TypedStream } from './typed.js';

/** What one request will generate, decided when it arrives. */
export interface Script {
  outputTokens: number;
  /** finish_reason reported on the last chunk. */
  finish: 'stop' | 'length' | 'tool_calls';
  /** The first this-many tokens are reasoning. */
  reasoningTokens: number;
  tool: boolean;
  rand: () => number;
}

const TOOL_OPEN = '{\\"query\\": \\"';
const TOOL_CLOSE = '\\"}';

/** Text of `count` tokens starting at token `from` (0-based), all in the kind of the first. */
function pieces(script: Script, from: number, count: number): { kind: Kind; text: string } {
  const kind: Kind = script.tool ? 'tool' : from < script.reasoningTokens ? 'reasoning' : 'content';
  let text = '';
  for (let i = from; i < from + count; i++) {
    const eos = i === script.outputTokens - 1 && script.finish !== 'length';
    if (script.tool) text += i === 1 ? TOOL_OPEN : '';
    if (eos) text += script.tool ? TOOL_CLOSE : '';
    else text += TOKENS[nextToken(script.rand)]!;
  }
  return { kind, text };
}

/** Which usage the stream carries, and which details (the simulator's --prompt-tokens-details, --reasoning-tokens-details). */
export interface UsageOptions {
  final: boolean;
  continuous: boolean;
  /** The sequence's prompt tokens served from the prefix cache (read when usage is written), or null: not reported. */
  cached: (() => number) | null;
  reasoningDetails: boolean;
  /** The sequence's own timing (--enable-per-request-metrics), read when usage is written; null: not sent. */
  timing: (() => PerRequestTiming) | null;
}

/** What the usage carries beside its counts. */
export type UsageDetails = Pick<UsageOptions, 'cached' | 'reasoningDetails' | 'timing'>;

/** Usage after `completion` tokens, with the details the options ask for. */
export function usageWithDetails(opts: UsageDetails, script: Script, prompt: number, completion: number): Usage {
  return {
    prompt,
    completion,
    cached: opts.cached ? opts.cached() : null,
    reasoning: opts.reasoningDetails ? Math.min(completion, script.tool ? 0 : script.reasoningTokens) : null,
    ...(opts.timing ? { timing: opts.timing() } : {}),
  };
}

export type Fault = { at: number; kind: 'error' | 'drop' } | null;

export class StreamReply implements SeqSink {
  private sent = 0;
  stopped = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly format: StreamFormat,
    private readonly script: Script,
    private readonly promptTokens: number,
    private readonly usage: UsageOptions,
    private readonly fault: Fault,
    /** Ends the sequence in the engine when the stream is cut short. */
    private readonly stop: () => void,
  ) {}

  tokens(count: number, last: boolean): void {
    if (this.stopped) return;
    const from = this.sent;
    this.sent += count;
    const u = this.usage.continuous ? usageJson(this.usageAt(this.sent)) : null;
    let out = from === 0 ? this.format.role(this.usage.continuous ? usageJson(this.usageAt(0)) : null) : '';
    if (this.script.tool && from === 0) {
      out += this.format.toolHead(u);
    } else {
      const p = pieces(this.script, from, count);
      out += this.format.chunk(p.kind, p.text, last ? this.script.finish : null, u);
    }
    if (this.fault && this.sent >= this.fault.at && !last) return this.cut(out, this.fault.kind);
    if (last) {
      if (this.usage.final) {
        const u = this.usageAt(this.sent);
        out += this.format.usageOnly(usageJson(u), metricsTail(u));
      }
      this.res.end(out + DONE_EVENT);
      this.stopped = true;
    } else this.res.write(out);
  }

  private usageAt(completion: number): Usage {
    return usageWithDetails(this.usage, this.script, this.promptTokens, completion);
  }

  private cut(out: string, kind: 'error' | 'drop'): void {
    this.stopped = true;
    this.stop();
    if (kind === 'error') {
      this.res.end(out + streamErrorEvent('Simulated engine failure (--midstream-error-rate).') + DONE_EVENT);
    } else {
      this.res.write(out);
      // Let the bytes so far leave, then cut the connection without ending the chunked body.
      setImmediate(() => this.res.socket?.destroy());
    }
  }
}

/** Non-streaming: collects the text and answers once, with usage. */
export class BodyReply implements SeqSink {
  private sent = 0;
  private readonly out: Collected = { content: '', reasoning: '', toolArgs: '' };

  constructor(
    private readonly script: Script,
    private readonly done: (out: Collected, finish: string, completionTokens: number) => void,
  ) {}

  tokens(count: number, last: boolean): void {
    const from = this.sent;
    this.sent += count;
    if (!(this.script.tool && from === 0)) {
      const p = pieces(this.script, from, count);
      if (p.kind === 'reasoning') this.out.reasoning += p.text;
      else if (p.kind === 'tool') this.out.toolArgs += p.text.replace(/\\"/g, '"');
      else this.out.content += p.text;
    }
    if (last) this.done(this.out, this.script.finish, this.sent);
  }
}

/** A Messages or Responses stream (typed.ts): the same tokens as chat, in that API's events. */
export class TypedStreamReply implements SeqSink {
  private sent = 0;
  stopped = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly stream: TypedStream,
    private readonly script: Script,
    private readonly promptTokens: number,
    private readonly usage: UsageDetails,
    private readonly fault: Fault,
    private readonly stop: () => void,
  ) {}

  tokens(count: number, last: boolean): void {
    if (this.stopped) return;
    const from = this.sent;
    this.sent += count;
    let out = from === 0 ? this.stream.start(this.promptTokens) : '';
    if (this.script.tool && from === 0) out += this.stream.toolHead();
    else {
      const p = pieces(this.script, from, count);
      out += this.stream.piece(p.kind, p.text);
    }
    if (this.fault && this.sent >= this.fault.at && !last) {
      this.stopped = true;
      this.stop();
      if (this.fault.kind === 'error') return void this.res.end(out + this.stream.error('Simulated engine failure (--midstream-error-rate).'));
      this.res.write(out);
      setImmediate(() => this.res.socket?.destroy());
      return;
    }
    if (last) {
      this.res.end(out + this.stream.finish(this.script.finish, usageWithDetails(this.usage, this.script, this.promptTokens, this.sent)));
      this.stopped = true;
    } else this.res.write(out);
  }
}
