/** Writes the three report files into --out; returns their paths. */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UnreadableFileError } from '../lib/errors.js';
import type { BenchReport } from './report.js';
import { renderMarkdown } from './markdown.js';
import { renderHtml } from './html.js';

export const REPORT_FILES = { json: 'bench.json', markdown: 'bench.md', html: 'bench.html' } as const;

export function writeReport(dir: string, report: BenchReport): { json: string; markdown: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const paths = { json: join(dir, REPORT_FILES.json), markdown: join(dir, REPORT_FILES.markdown), html: join(dir, REPORT_FILES.html) };
  writeFileSync(paths.json, JSON.stringify(report, null, 1) + '\n');
  writeFileSync(paths.markdown, renderMarkdown(report));
  writeFileSync(paths.html, renderHtml(report));
  return paths;
}

/** A report from a bench.json path or the --out directory holding one. */
export function readReport(path: string): BenchReport {
  let file = path;
  let text: string;
  try {
    if (statSync(path).isDirectory()) file = join(path, REPORT_FILES.json);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new UnreadableFileError('bench compare', `cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file or directory' : e.code === 'EACCES' ? 'permission denied' : e.message}${e.code ? ` (${e.code})` : ''}`, { cause: err });
  }
  let doc: BenchReport;
  try {
    doc = JSON.parse(text) as BenchReport;
  } catch {
    doc = null as unknown as BenchReport;
  }
  if (typeof doc !== 'object' || doc === null || doc.schemaVersion === undefined || !Array.isArray(doc.steps)) throw new UnreadableFileError('bench compare', `${file}: not an infermeter bench report`);
  return doc;
}
