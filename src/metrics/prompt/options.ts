/**
 * What the prompt block hashing reads of the configuration (config.ts's Config carries it):
 * where tokenizers are, how the characters cut estimates tokens, and the salt.
 */

/** A tokenizer for the requests of one model or one upstream (`name=path`), or for all (`*`). */
export interface TokenizerSpec {
  /** A model name as requested, an upstream's name, or `*` for every request no other entry names. */
  name: string;
  /** A tokenizer.json, a directory holding one (with tokenizer_config.json), or a GGUF model file. */
  path: string;
}

export interface PromptOptions {
  tokenizers: TokenizerSpec[];
  /** The Hugging Face hub cache to look models up in ('' = $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub; 'none' = off). */
  hfHubCache: string;
  /** The characters cut's ratio: a block of n tokens is n × this many characters. */
  promptCharsPerToken: number;
  /** Never empty once resolved: --prompt-hash-salt, or the random one kept in --state-dir (config.ts). */
  promptHashSalt: string;
}

/** `--tokenizers` entries: `name=path`, or a bare path for every model (`*`). */
export function parseTokenizers(v: string): TokenizerSpec[] {
  const out: TokenizerSpec[] = [];
  for (const item of v.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const eq = item.indexOf('=');
    const name = eq < 0 ? '*' : item.slice(0, eq).trim();
    const path = eq < 0 ? item : item.slice(eq + 1).trim();
    if (name === '' || path === '') throw new Error(`expected name=path (a model or upstream name, and a tokenizer.json, a directory or a .gguf file), got "${item}"`);
    if (out.some((t) => t.name === name)) throw new Error(`"${name}" is given twice`);
    out.push({ name, path });
  }
  return out;
}
