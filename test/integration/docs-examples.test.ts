/**
 * Every `infermeter …` line in the shell blocks of README.md and docs/*.md works from a
 * checkout: it parses with the real command table (every subcommand, every flag: an unknown
 * or misspelt flag fails here, not in a reader's terminal), and each path it names in the
 * checkout (bin/, examples/, deploy/, …) exists. Nothing points into a global npm install.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Command } from 'commander';
import { addConfigOptions } from '../../src/config.js';
import { SUBCOMMANDS } from '../../src/commands.js';
import { ROOT } from '../helpers.js';

const DOCS = ['README.md', ...readdirSync(`${ROOT}docs`).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** Paths that must exist in a checkout when an example names them. */
const CHECKOUT_PATH = /^(\.\/)?(bin|examples|deploy|grafana|schemas|scripts|test\/fixtures)\//;

/** The CLI's command tree (as cli.ts builds it), with every action a no-op and every error thrown. */
function program(): Command {
  const root = new Command('infermeter');
  root.addCommand(addConfigOptions(new Command('serve')), { isDefault: true });
  for (const add of SUBCOMMANDS) root.addCommand(add());
  const quiet = (c: Command, isRoot: boolean) => {
    c.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
    if (!isRoot) c.action(() => undefined);
    for (const sub of c.commands) quiet(sub, false);
  };
  quiet(root, true);
  return root;
}

/** Shell words of one command line: quotes kept together, redirections and what follows dropped. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const w = m[1] ?? m[2] ?? m[3]!;
    if (m[3] !== undefined && /^(>|2>|<|#)/.test(w)) break;
    out.push(w);
  }
  return out;
}

interface Example {
  doc: string;
  line: string;
  args: string[];
}

/** `infermeter …`, `npx infermeter …` and `node dist/src/cli.js …` commands of the sh blocks. */
function examples(): Example[] {
  const out: Example[] = [];
  for (const doc of DOCS) {
    const text = readFileSync(`${ROOT}${doc}`, 'utf8');
    for (const block of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
      const joined = block[1]!.replace(/\\\n\s*/g, ' ');
      for (const raw of joined.split('\n')) {
        for (const part of raw.split(/\s(?:&&|\|\||;|\||&)(?:\s|$)|\s&$/)) {
          const w = words(part.trim().replace(/^\$\s+/, ''));
          while (w.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0]!)) w.shift(); // VAR=value prefixes
          if (w[0] === 'npx') w.shift();
          else if (w[0] === 'node' && w[1] === 'dist/src/cli.js') w.splice(0, 1, 'infermeter');
          if (w[0] !== 'infermeter') continue;
          out.push({ doc, line: part.trim(), args: w.slice(1) });
        }
      }
    }
  }
  return out;
}

test('every infermeter command line in the docs parses with the real flag table', () => {
  const all = examples();
  assert.ok(all.length >= 15, `found only ${all.length} example lines: is the extraction broken?`);
  const bad: string[] = [];
  for (const ex of all) {
    try {
      program().parse(ex.args, { from: 'user' });
    } catch (err) {
      bad.push(`${ex.doc}: ${ex.line}\n    ${(err as Error).message}`);
    }
  }
  assert.deepEqual(bad, []);
  // Each subcommand is exercised by at least one example, serve included.
  const used = new Set(all.map((e) => (['simulate', 'demo', 'rules', 'bench'].includes(e.args[0] ?? '') ? e.args[0] : 'serve')));
  for (const c of ['bench', 'rules', 'serve', 'simulate']) assert.ok(used.has(c), `no example of ${c}`);
});

test('every checkout path an example names exists; --nvidia-smi points at something that runs here', () => {
  const missing: string[] = [];
  for (const ex of examples()) {
    for (const [i, w] of ex.args.entries()) {
      const value = w.includes('=') && w.startsWith('--') ? w.slice(w.indexOf('=') + 1) : w;
      if (CHECKOUT_PATH.test(value) && !existsSync(`${ROOT}${value}`)) missing.push(`${ex.doc}: ${value} in: ${ex.line}`);
      if (ex.args[i - 1] === '--nvidia-smi' && !['none', 'nvidia-smi'].includes(w) && !existsSync(`${ROOT}${w}`)) {
        missing.push(`${ex.doc}: --nvidia-smi ${w} does not exist in a checkout: ${ex.line}`);
      }
    }
  }
  assert.deepEqual(missing, []);
});

test('no doc points into a global npm install', () => {
  for (const doc of DOCS) assert.doesNotMatch(readFileSync(`${ROOT}${doc}`, 'utf8'), /npm root -g/, doc);
});
