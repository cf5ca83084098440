/**
 * docs/bottleneck.md's rule and signal tables, generated from the rules table
 * (src/metrics/bottleneck/rules.ts) and the signal table (signals.ts): `npm run docs`
 * rewrites them; a unit test keeps the file in step.
 */
import { FALLBACK_TARGETS, MIN_REQUESTS, NONE_LATENCY, RULES, ruleAdvice, type Condition } from '../src/metrics/bottleneck/rules.js';
import { SIGNALS, SIGNAL_NAMES } from '../src/metrics/bottleneck/signals.js';

function cond(c: Condition): string {
  return `\`${c.signal}\` ${c.op} ${c.enter} (stays while ${c.op} ${c.exit})${c.optional ? ' if measured' : ''}`;
}

const SPAN_WORDS = { window: '--bottleneck-window', life: 'since start', now: 'now', prefix: '--prefix-cache-window' } as const;

export function rulesTable(): string {
  const rows = RULES.map((r, i) => `| ${i + 1} | \`${r.kind}\` | ${r.when.map((alt) => alt.map(cond).join(' and ')).join('<br>or ')} | ${r.summary} | ${ruleAdvice(r, 'vllm')} |`);
  rows.push(`| ${RULES.length + 1} | \`none\` | \`latencyOverTarget\` < ${NONE_LATENCY.enter} (stays while < ${NONE_LATENCY.exit}) | no row above holds and latency is within target | ${'nothing to change'} |`);
  rows.push(`| ${RULES.length + 2} | \`unknown\` | otherwise | latency over target and no row explains it; \`missing\` names the signals the rows lacked | the missing collectors |`);
  return ['| order | kind | holds when | means | advice (vLLM; SGLang and llama.cpp in the JSON) |', '| --- | --- | --- | --- | --- |', ...rows,
    '', `Fewer than ${MIN_REQUESTS} finished requests in the window is \`unknown\` (row 1). Without an SLO of that name the latency ratios divide by the fallback targets: TTFT ${FALLBACK_TARGETS.ttft} s, TPOT ${FALLBACK_TARGETS.tpot} s.`].join('\n');
}

export function signalsTable(): string {
  return ['| signal | unit | window | what |', '| --- | --- | --- | --- |',
    ...SIGNAL_NAMES.map((n) => `| \`${n}\` | ${SIGNALS[n].unit} | ${SPAN_WORDS[SIGNALS[n].span]} | ${SIGNALS[n].what} |`)].join('\n');
}

const MARK = (name: string) => [`<!-- generated:${name} -->`, `<!-- /generated:${name} -->`] as const;

export function renderBottleneckDoc(doc: string): string {
  let out = doc;
  for (const [name, body] of [['rules', rulesTable()], ['signals', signalsTable()]] as const) {
    const [open, close] = MARK(name);
    const a = out.indexOf(open);
    const b = out.indexOf(close);
    if (a < 0 || b < a) throw new Error(`docs/bottleneck.md lacks the ${open} … ${close} markers`);
    out = `${out.slice(0, a + open.length)}\n${body}\n${out.slice(b)}`;
  }
  return out;
}
