/** Plumbing shared by the status page tests: traffic with a known schedule, the JSON endpoint, a schema validator. */
import { existsSync, readFileSync } from 'node:fs';
import { runCommand } from '../../src/lib/spawn.js';
import { Ajv } from 'ajv';
import { request } from 'undici';
import { ROOT } from '../helpers.js';
import type { StatusDocument } from '../../src/exporters/ui/status-json.js';

/** Streams one chat completion through the proxy and reads it to the end (after the fake upstream opens `gate`, if named). */
export async function chat(proxyUrl: string, model: string, schedule: { firstMs: number; chunks: number; gapMs: number }, extra: { prompt?: string; headers?: Record<string, string>; gate?: string } = {}): Promise<void> {
  const res = await request(`${proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...extra.headers },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: extra.prompt ?? 'hello' }], fake: { schedule, gate: extra.gate } }),
  });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`chat: status ${res.statusCode}`);
}

export async function status(metricsBase: string, query = ''): Promise<{ doc: StatusDocument; text: string; status: number }> {
  const res = await request(`${metricsBase}/api/v1/status${query}`);
  const text = await res.body.text();
  return { doc: (res.statusCode === 200 ? JSON.parse(text) : null) as StatusDocument, text, status: res.statusCode };
}

/** Polls the endpoint until `pred` holds (chart points close once a second). */
export async function statusWhen(metricsBase: string, pred: (d: StatusDocument) => boolean, timeoutMs = 8000): Promise<StatusDocument> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { doc } = await status(metricsBase);
    if (doc && pred(doc)) return doc;
    if (Date.now() > deadline) throw new Error(`status condition not met in ${timeoutMs} ms: ${JSON.stringify(doc).slice(0, 600)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The shipped schema, compiled with strict ajv (the schema itself is checked too). */
export function statusValidator() {
  const ajv = new Ajv({ allErrors: true, strict: true });
  return ajv.compile(JSON.parse(readFileSync(`${ROOT}schemas/status.schema.json`, 'utf8')));
}

export function metricsBase(metricsUrl: string): string {
  return metricsUrl.replace(/\/metrics$/, '');
}

/** The page as headless Chromium rendered it (--dump-dom), with everything but loopback unresolvable; null when there is no Chromium. */
export async function chromiumDom(url: string, profileDir: string): Promise<string | null> {
  const bin = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
  if (!existsSync(bin)) return null;
  const r = await runCommand(bin, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-extensions',
    '--no-first-run', `--user-data-dir=${profileDir}`, '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', '--window-size=1400,1700', '--virtual-time-budget=6000', '--dump-dom', url,
  ], 90_000);
  return r.stdout;
}
