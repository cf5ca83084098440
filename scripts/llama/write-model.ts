/**
 * Writes the tiny random-weight llama model for the real-engine tests (see
 * src/lib/gguf-llama.ts) next to the vocab files `engine.sh` extracted, and prints its path.
 * The file name carries every input, so an existing file is reused as is.
 *
 *   node dist/scripts/llama/write-model.js --vocab-dir DIR --out-dir DIR
 *     [--vocab llama-spm] [--embd 128] [--layers 2] [--heads 4] [--ff 256] [--ctx 2048] [--seed 42] [--f32]
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GgmlType, encodeGguf } from '../../src/lib/gguf.js';
import { readGguf } from '../../src/lib/gguf-read.js';
import { buildTinyLlama } from '../../src/lib/gguf-llama.js';

/** Bump when the generator's output changes for the same inputs. */
const GENERATOR_VERSION = 1;

function main(): void {
  const { values } = parseArgs({
    options: {
      'vocab-dir': { type: 'string' }, 'out-dir': { type: 'string' }, vocab: { type: 'string', default: 'llama-spm' },
      embd: { type: 'string', default: '128' }, layers: { type: 'string', default: '2' }, heads: { type: 'string', default: '4' },
      ff: { type: 'string', default: '256' }, ctx: { type: 'string', default: '2048' }, seed: { type: 'string', default: '42' },
      f32: { type: 'boolean', default: false },
    },
  });
  const vocabDir = values['vocab-dir'];
  const outDir = values['out-dir'];
  if (!vocabDir || !outDir) throw new Error('--vocab-dir and --out-dir are required');
  const int = (name: 'embd' | 'layers' | 'heads' | 'ff' | 'ctx' | 'seed') => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${values[name]}`);
    return n;
  };
  const params = {
    nEmbd: int('embd'), nLayer: int('layers'), nHead: int('heads'), nHeadKv: int('heads'), nFf: int('ff'),
    contextLength: int('ctx'), seed: int('seed'), weightType: values.f32 ? GgmlType.F32 : GgmlType.F16,
  };
  const vocabFile = join(vocabDir, `ggml-vocab-${values.vocab}.gguf`);
  const name = `tiny-llama-${values.vocab}-e${params.nEmbd}-l${params.nLayer}-h${params.nHead}-ff${params.nFf}`
    + `-c${params.contextLength}-${values.f32 ? 'f32' : 'f16'}-s${params.seed}-g${GENERATOR_VERSION}.gguf`;
  const out = join(outDir, name);
  if (!existsSync(out)) {
    if (!existsSync(vocabFile)) throw new Error(`vocab file ${vocabFile} not found`);
    const vocab = readGguf(readFileSync(vocabFile));
    const model = buildTinyLlama(vocab.kvs, { ...params, name: name.replace(/\.gguf$/, '') });
    mkdirSync(outDir, { recursive: true });
    writeFileSync(`${out}.tmp`, Buffer.concat(encodeGguf(model)));
    renameSync(`${out}.tmp`, out);
  }
  process.stdout.write(`${out}\n`);
}

try {
  main();
} catch (err) {
  process.stderr.write(`write-model: ${(err as Error).message}\n`);
  process.exit(1);
}
