// Keeps a demo stack busy: CONCURRENCY loops of streamed chat completions against TARGET
// (infermeter), with varied prompt and reply lengths. Plain Node 20, no dependencies.
// REQUESTS bounds the total (0 = run until stopped).
const target = (process.env.TARGET ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const model = process.env.MODEL ?? 'Qwen/Qwen2.5-1.5B-Instruct';
const concurrency = Number(process.env.CONCURRENCY ?? 4);
const limit = Number(process.env.REQUESTS ?? 0);
const pauseMs = Number(process.env.PAUSE_MS ?? 250);

let started = 0;
let failed = 0;
const words = 'the quick brown fox jumps over the lazy dog while the scheduler batches tokens'.split(' ');

async function one() {
  const prompt = Array.from({ length: 8 + Math.floor(Math.random() * 200) }, (_, i) => words[i % words.length]).join(' ');
  const res = await fetch(`${target}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, max_tokens: 16 + Math.floor(Math.random() * 240), messages: [{ role: 'user', content: prompt }] }),
  });
  for await (const _ of res.body ?? []) { /* drain the stream */ }
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
}

async function loop() {
  while (limit === 0 || started < limit) {
    started++;
    try {
      await one();
    } catch (err) {
      failed++;
      if (failed === 1 || failed % 100 === 0) console.error(`loadgen: ${failed} failed so far (${err.message})`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    await new Promise((r) => setTimeout(r, pauseMs * Math.random()));
  }
}

await Promise.all(Array.from({ length: concurrency }, loop));
console.log(`loadgen: ${started} requests, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
