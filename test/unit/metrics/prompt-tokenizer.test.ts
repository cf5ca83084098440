/**
 * src/metrics/prompt/tokenizer.ts with a Hugging Face tokenizer directory (a small BPE
 * tokenizer.json written here, its tokenizer_config.json carrying a chat template): a
 * completions prompt gets the post-processor's BOS, a chat is rendered by the template (whose
 * text carries the BOS) and tokenized without adding another; tokenizers are found by model,
 * then upstream, then `*`, then in the hub cache (the snapshot refs/main names); one that will
 * not load is reported and the characters cut serves that model.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizers, hubSnapshot, loadTokenizer } from '../../../src/metrics/prompt/tokenizer.js';

const SPECIAL = ['<unk>', '<s>', '</s>'];
const CHARS = 'abcdefghijklmnopqrstuvwxyz:|<>'.split('');
const MERGES = ['h e', 'l l', 'he ll', 'hell o', 's y', 'sy s'];
const VOCAB: Record<string, number> = {};
for (const t of [...SPECIAL, ...CHARS, ...MERGES.map((m) => m.replace(' ', ''))]) VOCAB[t] = Object.keys(VOCAB).length;
const TEMPLATE = '{{ bos_token }}{% for m in messages %}<|{{ m.role }}|> {{ m.content }} </s> {% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}';

/** Writes tokenizer.json and tokenizer_config.json into `dir`. */
function writeTokenizer(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const added = SPECIAL.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: {
      type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }], special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: null,
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: VOCAB, merges: MERGES },
  }));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>', chat_template: TEMPLATE }));
}

/** A word as single characters (for words no merge applies to). */
const chars = (word: string) => [...word].map((c) => VOCAB[c]!);

test('a tokenizer.json directory: completions get the BOS once; a chat is the template rendered, its BOS from the text, not added again', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tok-'));
  writeTokenizer(dir);
  for (const t of [loadTokenizer(dir), loadTokenizer(join(dir, 'tokenizer.json'))]) {
    assert.equal(t.source, dir);
    assert.deepEqual(t.text('hello sys'), [VOCAB['<s>'], VOCAB['hello'], VOCAB['sys']]);
    assert.deepEqual(
      t.chat([{ role: 'system', content: 'hello' }, { role: 'user', content: 'sys' }], null),
      [VOCAB['<s>'], ...chars('<|'), VOCAB['sys'], ...chars('tem|>'), VOCAB['hello'], VOCAB['</s>'], ...chars('<|user|>'), VOCAB['sys'], VOCAB['</s>'], ...chars('<|assistant|>')],
    );
  }
  rmSync(dir, { recursive: true, force: true });
});

test('found by model, then upstream, then *, then the hub cache (refs/main\'s snapshot); a miss or a broken file is null, reported once', () => {
  const root = mkdtempSync(join(tmpdir(), 'tok-'));
  const own = join(root, 'own');
  writeTokenizer(own);
  const hub = join(root, 'hub');
  const repo = join(hub, 'models--org--model');
  writeTokenizer(join(repo, 'snapshots', 'aaa'));
  writeTokenizer(join(repo, 'snapshots', 'bbb'));
  mkdirSync(join(repo, 'refs'));
  writeFileSync(join(repo, 'refs', 'main'), 'aaa\n');
  assert.equal(hubSnapshot(hub, 'org/model'), join(repo, 'snapshots', 'aaa'));
  assert.equal(hubSnapshot(hub, '../model'), null, 'not an org/name: never a path');
  assert.equal(hubSnapshot(hub, 'org/other'), null);

  const broken = join(root, 'broken.json');
  writeFileSync(broken, '{"model": 1}');
  const failed: string[] = [];
  const byName = new Tokenizers({ tokenizers: [{ name: 'm1', path: own }, { name: 'gpu0', path: broken }], hfHubCache: hub }, {}, (path) => failed.push(path));
  assert.equal(byName.for('m1', 'gpu0')?.source, own, 'the model\'s own entry first');
  assert.equal(byName.for('m2', 'gpu0'), null, 'the upstream\'s entry, which does not load');
  assert.equal(byName.for('m2', 'gpu0'), null);
  assert.deepEqual(failed, [broken], 'reported once');
  assert.equal(byName.for('org/model', null)?.source, join(repo, 'snapshots', 'aaa'), 'no entry: the hub cache');
  assert.equal(byName.for('org/unknown', null), null);

  const star = new Tokenizers({ tokenizers: [{ name: '*', path: own }], hfHubCache: 'none' }, {}, () => undefined);
  assert.equal(star.for('anything', null)?.source, own);
  const none = new Tokenizers({ tokenizers: [], hfHubCache: 'none' }, { HF_HUB_CACHE: hub }, () => undefined);
  assert.equal(none.for('org/model', null), null, '--hf-hub-cache none: never looked up');
  const env = new Tokenizers({ tokenizers: [], hfHubCache: '' }, { HF_HUB_CACHE: hub }, () => undefined);
  assert.equal(env.for('org/model', null)?.source, join(repo, 'snapshots', 'aaa'), '$HF_HUB_CACHE');
  rmSync(root, { recursive: true, force: true });
});
