/**
 * The simulator's HTTP side: a plain node:http server with vLLM's routes. Generation
 * requests become engine sequences whose tokens stream back as they are scheduled.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  chatCompletionBody, chatStreamFormat, completionBody, completionStreamFormat, errorBody, type StreamIdentity,
} from './chunks.js';
import type { Engine, Sequence } from './engine.js';
import type { SimOptions } from './options.js';
import { BodyReply, StreamReply, TypedStreamReply, usageWithDetails, type Fault } from './reply.js';
import { messagesBody, messagesStream, queuedResponseBody, responsesBody, responsesStream, type TypedIdentity } from './typed.js';
import { parseGeneration, planScript, RequestError } from './request.js';
import type { ApiName } from '../record/routes.js';
import { blockHashes, hexId, prng } from './text.js';
import type { Registry } from 'prom-client';

const BODY_LIMIT = 32 * 1024 * 1024;
const JSON_TYPE = { 'content-type': 'application/json' };

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface ServerCounts {
  requests: number;
  injectedErrors: number;
  injectedMidstreamErrors: number;
  injectedDrops: number;
  /** Requests refused by --max-num-queued-reqs, and their prompt tokens. */
  queueFull: number;
  queueFullPromptTokens: number;
}

export function createHandler(opts: SimOptions, engine: Engine, registry: Registry, counts: ServerCounts): Handler {
  const idRand = prng(opts.seed ^ 0x5eed1d);
  const faultRand = prng(opts.seed ^ 0xfa017);
  const created = Math.floor(Date.now() / 1000);
  const modelsBody = JSON.stringify({
    object: 'list',
    data: opts.models.map((id) => ({
      id, object: 'model', created, owned_by: 'vllm', root: id, parent: null, max_model_len: opts.maxModelLen,
      permission: [{
        id: `modelperm-${hexId(idRand)}`, object: 'model_permission', created, allow_create_engine: false, allow_sampling: true,
        allow_logprobs: true, allow_search_indices: false, allow_view: true, allow_fine_tuning: false, organization: '*', group: null, is_blocking: false,
      }],
    })),
  });
  const versionBody = JSON.stringify({ version: opts.version });

  const pickFault = (outputTokens: number): Fault => {
    if (outputTokens < 2) return null;
    const at = () => 1 + Math.floor(faultRand() * (outputTokens - 1));
    if (opts.midstreamErrorRate > 0 && faultRand() < opts.midstreamErrorRate) return { at: at(), kind: 'error' };
    if (opts.dropRate > 0 && faultRand() < opts.dropRate) return { at: at(), kind: 'drop' };
    return null;
  };

  const generate = (api: ApiName) => async (req: IncomingMessage, res: ServerResponse) => {
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      const status = err instanceof RequestError ? err.status : 400;
      return sendError(res, status, status === 413 ? 'RequestEntityTooLarge' : 'BadRequestError', status === 413 ? 'Request body too large.' : 'The request body is not valid JSON.');
    }
    let gen;
    try {
      gen = parseGeneration(api, body, opts);
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      return sendError(res, err.status, err.type, err.message);
    }
    counts.requests++;
    if (opts.maxNumQueuedReqs > 0 && engine.state().waiting >= opts.maxNumQueuedReqs) {
      // Refused after the prompt was read and counted, as vLLM's admission limit does.
      counts.queueFull++;
      counts.queueFullPromptTokens += gen.promptTokens;
      const tooMany = opts.queueFullStatus === 429;
      return sendError(res, opts.queueFullStatus, tooMany ? 'TooManyRequestsError' : 'ServiceUnavailableError', `The waiting queue is full (--max-num-queued-reqs ${opts.maxNumQueuedReqs}); retry later.`);
    }
    if (opts.errorRate > 0 && faultRand() < opts.errorRate) {
      counts.injectedErrors++;
      return sendError(res, 500, 'InternalServerError', 'Simulated engine failure (--error-rate).');
    }
    const script = planScript(gen, opts);
    const who: StreamIdentity = {
      id: api === 'responses' ? `resp_${hexId(idRand)}` : `${api === 'completions' ? 'cmpl' : 'chatcmpl'}-${hexId(idRand)}`,
      created: Math.floor(Date.now() / 1000),
      model: gen.model,
      reasoningField: opts.reasoning ?? 'reasoning_content',
      tool: gen.toolName !== null ? { id: `chatcmpl-tool-${hexId(idRand)}`, name: gen.toolName } : null,
    };
    const spec = {
      model: gen.model,
      promptTokens: gen.promptTokens,
      hashes: blockHashes(gen.promptText, opts.blockSize),
      outputTokens: script.outputTokens,
      finishReason: script.finish === 'length' ? ('length' as const) : ('stop' as const),
    };
    let seq: Sequence | null = null;
    let ended = false;
    const details = {
      cached: opts.promptTokensDetails ? () => seq?.cachedTokens ?? 0 : null, reasoningDetails: opts.reasoningTokensDetails,
      timing: opts.perRequestMetrics ? () => seq!.timing() : null,
    };
    res.on('close', () => {
      if (!ended && seq) engine.abort(seq);
      ended = true;
    });
    const typed: TypedIdentity | null = api === 'messages' || api === 'responses'
      ? { id: who.id, created: who.created, model: who.model, tool: who.tool, maxTokens: gen.maxTokens ?? opts.maxModelLen - gen.promptTokens }
      : null;
    if (typed && gen.background && !gen.stream) {
      // Queued at once; the engine still generates it (the GPU is busy), nobody waits for it here.
      res.writeHead(200, JSON_TYPE).end(queuedResponseBody(typed));
      ended = true;
      seq = engine.add({ ...spec, sink: { tokens: () => {} } });
      return;
    }
    if (typed && gen.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.flushHeaders();
      const fault = pickFault(script.outputTokens);
      if (fault?.kind === 'error') counts.injectedMidstreamErrors++;
      if (fault?.kind === 'drop') counts.injectedDrops++;
      const stream = api === 'messages' ? messagesStream(typed, idRand) : responsesStream(typed, idRand);
      const reply = new TypedStreamReply(res, stream, script, gen.promptTokens, details, fault, () => {
        ended = true;
        if (seq) engine.abort(seq);
      });
      seq = engine.add({ ...spec, sink: { tokens: (n, last) => { if (last) ended = true; reply.tokens(n, last); } } });
    } else if (gen.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.flushHeaders();
      const fault = pickFault(script.outputTokens);
      if (fault?.kind === 'error') counts.injectedMidstreamErrors++;
      if (fault?.kind === 'drop') counts.injectedDrops++;
      const format = api === 'chat' ? chatStreamFormat(who) : completionStreamFormat(who);
      const usage = { final: gen.includeUsage, continuous: gen.continuousUsage, ...details };
      const reply = new StreamReply(res, format, script, gen.promptTokens, usage, fault, () => {
        ended = true;
        if (seq) engine.abort(seq);
      });
      seq = engine.add({ ...spec, sink: { tokens: (n, last) => { if (last) ended = true; reply.tokens(n, last); } } });
    } else {
      const reply = new BodyReply(script, (out, finish, completion) => {
        ended = true;
        const usage = usageWithDetails(details, script, gen.promptTokens, completion);
        const body = typed ? (api === 'messages' ? messagesBody : responsesBody)(typed, out, finish, usage, idRand)
          : api === 'chat' ? chatCompletionBody(who, out, finish, usage) : completionBody(who, out, finish, usage);
        res.writeHead(200, JSON_TYPE).end(body);
      });
      seq = engine.add({ ...spec, sink: reply });
    }
  };

  /** Token counting: the prompt's count, no generation. */
  const countTokens = (api: ApiName) => async (req: IncomingMessage, res: ServerResponse) => {
    let gen;
    try {
      gen = parseGeneration(api, { max_tokens: 1, ...(JSON.parse(await readBody(req)) as object) }, opts);
    } catch (err) {
      if (err instanceof RequestError) return sendError(res, err.status, err.type, err.message);
      return sendError(res, 400, 'BadRequestError', 'The request body is not valid JSON.');
    }
    res.writeHead(200, JSON_TYPE).end(JSON.stringify(api === 'messages' ? { input_tokens: gen.promptTokens } : { object: 'response.input_tokens', input_tokens: gen.promptTokens }));
  };

  const routes: Record<string, Handler> = {
    'GET /health': (_req, res) => void res.writeHead(200).end(),
    'GET /version': (_req, res) => void res.writeHead(200, JSON_TYPE).end(versionBody),
    'GET /v1/models': (_req, res) => void res.writeHead(200, JSON_TYPE).end(modelsBody),
    'GET /metrics': async (_req, res) => {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType }).end(text);
    },
    'POST /v1/chat/completions': generate('chat'),
    'POST /v1/completions': generate('completions'),
    'POST /v1/messages': generate('messages'),
    'POST /v1/responses': generate('responses'),
    'POST /v1/messages/count_tokens': countTokens('messages'),
    'POST /v1/responses/input_tokens': countTokens('responses'),
  };
  const paths = new Set(Object.keys(routes).map((k) => k.split(' ')[1]));

  return (req, res) => {
    const q = req.url!.indexOf('?');
    const path = q === -1 ? req.url! : req.url!.slice(0, q);
    const handler = routes[`${req.method} ${path}`];
    if (!handler) {
      req.resume();
      const allowed = paths.has(path);
      res.writeHead(allowed ? 405 : 404, JSON_TYPE).end(JSON.stringify({ detail: allowed ? 'Method Not Allowed' : 'Not Found' }));
      return;
    }
    Promise.resolve(handler(req, res)).catch((err: Error) => {
      if (!res.headersSent) sendError(res, 500, 'InternalServerError', err.message);
      else res.destroy(err);
    });
  };
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, JSON_TYPE).end(errorBody(status, type, message));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (b: Buffer) => {
      size += b.length;
      if (size > BODY_LIMIT) {
        req.removeAllListeners('data');
        req.resume();
        reject(new RequestError(413, 'RequestEntityTooLarge', 'Request body too large.'));
      } else parts.push(b);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}
