/**
 * A small Dockerfile reader for lint tests (no Docker engine or hadolint here): joins
 * continuation lines, drops comments, substitutes global ARG defaults into FROM, and splits
 * the instructions into stages.
 */
export interface Instruction { op: string; args: string; line: number }
export interface Stage { base: string; name: string | null; body: Instruction[] }

/** Instructions with continuations joined and comments dropped, split into FROM stages. */
export function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const instructions: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) return;
    if (pending === '') start = i + 1;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const [op, ...rest] = full.split(/\s+/);
    instructions.push({ op: op!.toUpperCase(), args: rest.join(' '), line: start });
  });
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'ARG' && stages.length === 0) {
      const [k, v] = ins.args.split('=');
      args.set(k!, v ?? '');
    } else if (ins.op === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Dockerfile line ${ins.line}: malformed FROM`);
      const base = m[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string, b: string) => args.get(a ?? b) ?? '');
      stages.push({ base, name: m[2] ?? null, body: [] });
    } else {
      if (stages.length === 0) throw new Error(`Dockerfile line ${ins.line}: ${ins.op} before any FROM`);
      stages.at(-1)!.body.push(ins);
    }
  }
  return { args, stages };
}

/** The healthcheck's argv (exec form) of a stage, or null. */
export function healthcheckArgv(stage: Stage): string[] | null {
  const hc = stage.body.find((i) => i.op === 'HEALTHCHECK');
  if (!hc) return null;
  return JSON.parse(hc.args.slice(hc.args.indexOf('CMD') + 3).trim()) as string[];
}

/**
 * Whether a top-level path of the build context gets past a .dockerignore (the subset of
 * its syntax this repository uses: `*`, plain paths, `!` exceptions; last match wins).
 */
export function dockerignoreFilter(text: string): (path: string) => boolean {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  return (path) => {
    let ok = true;
    for (const r of rules) {
      const neg = r.startsWith('!');
      const pat = (neg ? r.slice(1) : r).replace(/\/$/, '');
      if (pat === '*' || path === pat || path.startsWith(pat + '/')) ok = neg;
    }
    return ok;
  };
}
