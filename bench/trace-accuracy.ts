/**
 * npm run bench:trace-accuracy — how close the workload trace's two ways of cutting a prompt
 * come to the engine's own tokens (docs/workload-trace.md, "Block ids"), against llama-server
 * (INFERMETER_LLAMA_SERVER and INFERMETER_LLAMA_MODEL, as `npm run engine:llama` prints them).
 *
 * For a corpus of chat and completions prompts (system prompts of prose, code, JSON, numbers
 * and non-English text, each with several questions), the truth is the server's own tokens
 * (/apply-template then /tokenize). Against it:
 * - the tokens cut (the model's GGUF as tokenizer, as `--tokenizers` loads it): token counts
 *   equal, and chains of ids equal;
 * - the chars cut (`--prompt-chars-per-token`, 4): the token count's error, and for every pair
 *   of prompts the shared leading blocks (what a prefix cache could reuse) against the truth's.
 * BENCH_TRACE_BLOCKS (default 16,64): the block sizes compared.
 */
import { spawn } from 'node:child_process';
import { PrefixHasher, fullBlockIds, type PromptBlocks } from '../src/lib/block-hash.js';
import { charsText, readPromptRequest } from '../src/metrics/prompt/request-text.js';
import { loadTokenizer } from '../src/metrics/prompt/tokenizer.js';
import { freePort, percentile, sorted } from './lib.js';

const SERVER = process.env['INFERMETER_LLAMA_SERVER'];
const MODEL = process.env['INFERMETER_LLAMA_MODEL'];
if (!SERVER || !MODEL) throw new Error('set INFERMETER_LLAMA_SERVER and INFERMETER_LLAMA_MODEL (`set -a; eval "$(npm run -s engine:llama)"; set +a`)');
const BLOCKS = (process.env['BENCH_TRACE_BLOCKS'] ?? '16,64').split(',').map(Number);

const SYSTEMS: Record<string, string> = {
  prose: 'You are a helpful assistant for a shipping company. Answer questions about parcels, delivery times and customs in plain language, in two or three sentences, and never invent tracking numbers. '.repeat(3),
  code: 'function parse(input) {\n  const out = [];\n  for (const line of input.split("\\n")) {\n    if (line.trim() === "") continue;\n    out.push(line.split(",").map(Number));\n  }\n  return out;\n}\n'.repeat(3),
  json: JSON.stringify({ tools: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] } } } }], policy: 'answer with one tool call' }).repeat(3),
  numbers: Array.from({ length: 120 }, (_, i) => (i * 7919) % 10007).join(', '),
  german: 'Du bist ein freundlicher Assistent. Beantworte Fragen über Zugverbindungen, Verspätungen und Fahrkarten kurz und höflich, ohne Fachjargon. Übermäßige Höflichkeit ist unnötig. '.repeat(3),
};
const QUESTIONS = ['Where is my parcel?', 'Explain the second step in detail, please, with an example of what could go wrong.', 'Why?', 'Summarise the above in one line.'];

interface Case { system: string; question: string; api: 'chat' | 'completions'; body: Record<string, unknown> }
const cases: Case[] = [];
for (const [system, text] of Object.entries(SYSTEMS)) {
  for (const question of QUESTIONS) {
    cases.push({ system, question, api: 'chat', body: { model: 'm', messages: [{ role: 'system', content: text }, { role: 'user', content: question }] } });
    cases.push({ system, question, api: 'completions', body: { model: 'm', prompt: text + question } });
  }
}

const port = await freePort();
const server = spawn(SERVER, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(port), '-c', '4096', '--threads', '1', '--no-webui'], { stdio: 'ignore' });
const url = `http://127.0.0.1:${port}`;
try {
  for (let t = 0; ; t++) {
    if (t > 600) throw new Error('llama-server not healthy after 60 s');
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const post = async (path: string, payload: unknown) => (await (await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) })).json()) as Record<string, unknown>;
  const tokenizer = loadTokenizer(MODEL);
  const hasher = new PrefixHasher('accuracy');
  const rows = [];
  for (const c of cases) {
    const req = readPromptRequest(c.api, Buffer.from(JSON.stringify(c.body)))!;
    const rendered = c.api === 'chat' ? ((await post('/apply-template', { messages: req.messages }))['prompt'] as string) : req.prompt!;
    const truth = (await post('/tokenize', { content: rendered, add_special: true, parse_special: c.api === 'chat' }))['tokens'] as number[];
    const ours = c.api === 'chat' ? tokenizer.chat(req.messages!, null) : tokenizer.text(req.prompt!);
    const text = charsText(req)!;
    rows.push({ c, truth, ours, text });
  }
  const exactCount = rows.filter((r) => r.ours.length === r.truth.length).length;
  const exactIds = rows.filter((r) => r.ours.length === r.truth.length && r.ours.every((x, i) => x === r.truth[i])).length;
  const charsError = sorted(rows.map((r) => Math.abs(Math.ceil(r.text.length / 4) - r.truth.length) / r.truth.length));
  const signed = sorted(rows.map((r) => (Math.ceil(r.text.length / 4) - r.truth.length) / r.truth.length));
  console.log(`workload trace block accuracy against llama-server (${MODEL.split('/').pop()}), ${rows.length} prompts (chat and completions; ${Object.keys(SYSTEMS).length} system prompts × ${QUESTIONS.length} questions)`);
  console.log(`tokens cut (the GGUF as tokenizer): token count equal to the server's in ${exactCount}/${rows.length}, token ids equal in ${exactIds}/${rows.length}`);
  console.log(`chars cut (4 characters a token): token count error |est − true| / true: median ${(percentile(charsError, 50) * 100).toFixed(1)}%, p90 ${(percentile(charsError, 90) * 100).toFixed(1)}%, max ${(charsError.at(-1)! * 100).toFixed(1)}%; signed median ${(percentile(signed, 50) * 100).toFixed(1)}%`);
  for (const size of BLOCKS) {
    const chains = rows.map((r) => {
      const cut = (b: PromptBlocks) => fullBlockIds(b, size);
      return { truth: cut(hasher.tokens(r.truth, size)), ours: cut(hasher.tokens(r.ours, size)), chars: cut(hasher.chars(r.text, size, 4)) };
    });
    let pairs = 0;
    let tokensSame = 0;
    let charsSame = 0;
    let truthShared = 0;
    let charsShared = 0;
    let falseShare = 0;
    const lead = (a: number[], b: number[]) => {
      let k = 0;
      while (k < a.length && k < b.length && a[k] === b[k]) k++;
      return k;
    };
    for (let i = 0; i < rows.length; i++) {
      for (let j = i + 1; j < rows.length; j++) {
        if (rows[i]!.c.api !== rows[j]!.c.api) continue;
        pairs++;
        const t = lead(chains[i]!.truth, chains[j]!.truth);
        const o = lead(chains[i]!.ours, chains[j]!.ours);
        const ch = lead(chains[i]!.chars, chains[j]!.chars);
        if (o === t) tokensSame++;
        if (ch === t) charsSame++;
        truthShared += t;
        charsShared += ch;
        if (t === 0 && ch > 0) falseShare++;
      }
    }
    console.log(`block ${size}: over ${pairs} pairs of prompts of one API, shared leading full blocks: tokens cut = the server's in ${tokensSame}/${pairs}; chars cut = the server's in ${charsSame}/${pairs}, ${charsShared} blocks shared in all against the server's ${truthShared} (${((charsShared / Math.max(1, truthShared)) * 100).toFixed(0)}%), ${falseShare} pairs sharing where the server's tokens share nothing`);
  }
} finally {
  server.kill('SIGTERM');
}
