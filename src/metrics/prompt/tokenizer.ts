/**
 * Tokenizing a prompt as the engine does, where infermeter can: the model's tokenizer.json and
 * chat template, through @huggingface/tokenizers and @huggingface/jinja (pure JavaScript), or
 * a GGUF file's tokenizer converted to the same form (lib/gguf-tokenizer.ts). Found from
 * --tokenizers (by model name, then upstream name, then `*`), else from the Hugging Face hub
 * cache the engine loads from, by model name. Loaded once per model, on the hashing thread.
 *
 * The two engine families differ in one detail, followed here: vLLM and SGLang (Hugging Face
 * tokenizers) render the chat template, whose text carries the BOS token where the model wants
 * one, and tokenize it without adding special tokens, while a completions prompt gets them;
 * llama.cpp adds BOS to every prompt (chat or not) when the GGUF says add_bos_token.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { readGgufMetadata } from '../../lib/gguf-read.js';
import { GgufError } from '../../lib/gguf.js';
import { tokenizerFromGguf } from '../../lib/gguf-tokenizer.js';
import type { ChatMessage } from './request-text.js';
import type { PromptOptions } from './options.js';

export interface PromptTokenizer {
  /** Where it came from (a path), for the trace's sidecar. */
  source: string;
  chat(messages: ChatMessage[], tools: unknown[] | null): number[];
  text(prompt: string): number[];
}

/** llama.cpp's template for a GGUF without one (chatml). */
const CHATML = "{%- for message in messages -%}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}{%- endfor -%}"
  + "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

type Obj = Record<string, unknown>;

/** A special token in tokenizer_config.json: a string, or an AddedToken object. */
function tokenText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as Obj)['content'] === 'string') return (v as Obj)['content'] as string;
  return null;
}

function render(template: Template, messages: ChatMessage[], tools: unknown[] | null, special: Obj): string {
  return template.render({ messages, ...(tools ? { tools } : {}), add_generation_prompt: true, ...special });
}

/** A Hugging Face model directory (tokenizer.json, tokenizer_config.json, maybe chat_template.jinja). */
function fromHfDir(dir: string): PromptTokenizer {
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as Obj;
  const configPath = join(dir, 'tokenizer_config.json');
  const config = existsSync(configPath) ? (JSON.parse(readFileSync(configPath, 'utf8')) as Obj) : {};
  const tok = new Tokenizer(json, config);
  const template = chatTemplateOf(dir, config);
  const special = { bos_token: tokenText(config['bos_token']) ?? '', eos_token: tokenText(config['eos_token']) ?? '', unk_token: tokenText(config['unk_token']) ?? '' };
  return {
    source: dir,
    chat: (messages, tools) => {
      if (!template) throw new Error(`${dir} has no chat template`);
      return tok.encode(render(template, messages, tools, special), { add_special_tokens: false }).ids;
    },
    text: (prompt) => tok.encode(prompt).ids,
  };
}

function chatTemplateOf(dir: string, config: Obj): Template | null {
  let t = config['chat_template'];
  if (Array.isArray(t)) t = (t as Obj[]).find((x) => x['name'] === 'default')?.['template'] ?? (t as Obj[])[0]?.['template'];
  if (typeof t !== 'string' && existsSync(join(dir, 'chat_template.jinja'))) t = readFileSync(join(dir, 'chat_template.jinja'), 'utf8');
  if (typeof t !== 'string' && existsSync(join(dir, 'chat_template.json'))) t = (JSON.parse(readFileSync(join(dir, 'chat_template.json'), 'utf8')) as Obj)['chat_template'];
  return typeof t === 'string' ? new Template(t) : null;
}

/** The metadata of a GGUF file, read from its start only (the tensors can be gigabytes). */
function ggufMetadata(path: string): ReturnType<typeof readGgufMetadata> {
  const fd = openSync(path, 'r');
  try {
    const size = statSync(path).size;
    for (let want = 16 << 20; ; want *= 2) {
      const buf = Buffer.allocUnsafe(Math.min(want, size));
      const n = readSync(fd, buf, 0, buf.length, 0);
      try {
        return readGgufMetadata(buf.subarray(0, n));
      } catch (err) {
        if (!(err instanceof GgufError && err.message.startsWith('truncated')) || n >= size || want >= 1 << 30) throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
}

function fromGguf(path: string): PromptTokenizer {
  const g = tokenizerFromGguf(ggufMetadata(path).kvs);
  const tok = new Tokenizer(g.tokenizer, g.config);
  const bos = g.addBos && g.bosToken !== null ? [(g.tokenizer['model'] as { vocab: Record<string, number> }).vocab[g.bosToken]!] : [];
  const template = new Template(g.chatTemplate ?? CHATML);
  const special = { bos_token: g.bosToken ?? '', eos_token: g.eosToken ?? '' };
  const encode = (text: string) => [...bos, ...tok.encode(text, { add_special_tokens: false }).ids];
  return {
    source: path,
    chat: (messages, tools) => encode(render(template, messages, tools, special)),
    text: encode,
  };
}

/** A path from --tokenizers: a GGUF file, a tokenizer.json, or a directory holding either. */
export function loadTokenizer(path: string): PromptTokenizer {
  if (statSync(path).isDirectory()) {
    if (existsSync(join(path, 'tokenizer.json'))) return fromHfDir(path);
    const gguf = readdirSync(path).filter((f) => f.endsWith('.gguf')).sort()[0];
    if (gguf) return fromGguf(join(path, gguf));
    throw new Error(`${path} holds neither tokenizer.json nor a .gguf file`);
  }
  if (path.endsWith('.gguf')) return fromGguf(path);
  return fromHfDir(dirname(path));
}

/** The hub cache directory: the setting, else $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub; null for `none`. */
export function hubCacheDir(setting: string, env: NodeJS.ProcessEnv): string | null {
  if (setting === 'none') return null;
  if (setting !== '') return setting;
  return env['HF_HUB_CACHE'] || (env['HF_HOME'] ? join(env['HF_HOME'], 'hub') : join(homedir(), '.cache', 'huggingface', 'hub'));
}

/** A model's snapshot in the hub cache that has a tokenizer.json: the one refs/main names, else the newest. */
export function hubSnapshot(cache: string, model: string): string | null {
  if (!/^[\w.-]+\/[\w.-]+$/.test(model)) return null;
  const repo = join(cache, `models--${model.replace('/', '--')}`);
  const snapshots = join(repo, 'snapshots');
  if (!existsSync(snapshots)) return null;
  const main = join(repo, 'refs', 'main');
  const candidates = existsSync(main) ? [readFileSync(main, 'utf8').trim()] : [];
  const all = readdirSync(snapshots).map((d) => ({ d, t: statSync(join(snapshots, d)).mtimeMs })).sort((a, b) => b.t - a.t).map((x) => x.d);
  for (const d of [...candidates, ...all]) if (existsSync(join(snapshots, d, 'tokenizer.json'))) return join(snapshots, d);
  return null;
}

/**
 * The tokenizer of each model, looked up and loaded once (a miss is remembered too: the
 * characters cut then serves that model). `failed` hears of each tokenizer that would not load.
 */
export class Tokenizers {
  private readonly byKey = new Map<string, PromptTokenizer | null>();
  private readonly cache: string | null;

  constructor(
    private readonly opts: Pick<PromptOptions, 'tokenizers' | 'hfHubCache'>,
    env: NodeJS.ProcessEnv,
    private readonly failed: (path: string, err: Error) => void,
  ) {
    this.cache = hubCacheDir(opts.hfHubCache, env);
  }

  for(model: string, upstream: string | null): PromptTokenizer | null {
    const key = `${model}\0${upstream ?? ''}`;
    if (this.byKey.has(key)) return this.byKey.get(key)!;
    const entries = this.opts.tokenizers;
    const spec = entries.find((t) => t.name === model) ?? entries.find((t) => upstream !== null && t.name === upstream) ?? entries.find((t) => t.name === '*');
    const path = spec ? spec.path : this.cache ? hubSnapshot(this.cache, model) : null;
    let tok: PromptTokenizer | null = null;
    if (path) {
      const loaded = [...this.byKey.values()].find((t) => t?.source === path);
      try {
        tok = loaded ?? loadTokenizer(path);
      } catch (err) {
        this.failed(path, err as Error);
      }
    }
    this.byKey.set(key, tok);
    return tok;
  }
}
