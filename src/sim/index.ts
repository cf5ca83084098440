/**
 * The built-in vLLM simulator, for demos, tests and benchmarks:
 *
 *   const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 10 });
 *   ... http://127.0.0.1:${sim.port}/v1/chat/completions ...
 *   sim.state();  // running, waiting, KV usage, counters
 *   await sim.close();
 *
 * Options take the same keys as SimOptions, either typed values or the flag strings.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Engine, type EngineState } from './engine.js';
import { createSimMetrics } from './metrics.js';
import { resolveSimOptions, type SimOptions } from './options.js';
import { createHandler, type ServerCounts } from './server.js';

export type { SimOptions } from './options.js';

export type SimState = EngineState & ServerCounts;

export interface Simulator {
  port: number;
  /** http://host:port */
  url: string;
  options: SimOptions;
  state(): SimState;
  close(): Promise<void>;
}

export type SimulatorInput = Partial<{ [K in keyof SimOptions]: SimOptions[K] | string }>;

export async function startSimulator(input: SimulatorInput = {}): Promise<Simulator> {
  const opts = resolveSimOptions(input);
  const blocks = Math.floor(opts.kvCacheTokens / opts.blockSize);
  if (blocks < Math.ceil(opts.maxModelLen / opts.blockSize)) {
    // vLLM refuses to start in this case too: one full-length request could never fit.
    throw new Error(`--kv-cache-tokens ${opts.kvCacheTokens} cannot hold one --max-model-len ${opts.maxModelLen} sequence`);
  }
  let engine: Engine | null = null;
  const metrics = createSimMetrics(opts, () => engine!.state());
  engine = new Engine(opts, metrics.events);
  const counts: ServerCounts = { requests: 0, injectedErrors: 0, injectedMidstreamErrors: 0, injectedDrops: 0, queueFull: 0, queueFullPromptTokens: 0 };
  const server = createServer({ keepAliveTimeout: 5000 }, createHandler(opts, engine, metrics.registry, counts));
  await listen(server, opts.listen.host, opts.listen.port);
  const port = (server.address() as AddressInfo).port;
  const host = opts.listen.host.includes(':') ? `[${opts.listen.host}]` : opts.listen.host;
  const running = engine;
  return {
    port,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    options: opts,
    state: () => ({ ...running.state(), ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        running.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`--listen ${host}:${port}: cannot listen: ${err.message}`, { cause: err })));
    server.listen(port, host, () => resolve());
  });
}
