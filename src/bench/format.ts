/** Number formatting shared by the Markdown, HTML and compare renderers. */
import type { BenchReport, StepReport } from './report.js';

export const DASH = '–';

export function msText(seconds: number | null | undefined, digits = 1): string {
  return seconds === null || seconds === undefined ? DASH : (seconds * 1000).toFixed(digits);
}

export function num(v: number | null | undefined, digits = 2): string {
  return v === null || v === undefined || !Number.isFinite(v) ? DASH : v.toFixed(digits);
}

export function pct(v: number | null | undefined, digits = 0): string {
  return v === null || v === undefined ? DASH : `${(v * 100).toFixed(digits)}%`;
}

export function gib(bytes: number | null | undefined): string {
  return bytes === null || bytes === undefined ? DASH : (bytes / 1024 ** 3).toFixed(1);
}

export function stepLabel(s: Pick<StepReport, 'mode' | 'load'>): string {
  return s.mode === 'rate' ? `${s.load} req/s` : s.mode === 'replay' ? `replay ×${s.load}` : `c=${s.load}`;
}

export function errorsText(errors: Record<string, number | undefined>): string {
  const parts = Object.entries(errors).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`);
  return parts.length ? parts.join(', ') : '0';
}

export function gpuText(r: BenchReport): string {
  const g = r.environment['gpu'] as { available: boolean; count: number; models: string[]; driverVersion: string | null; cudaVersion: string | null; error: string | null };
  if (!g.available) return `absent (${g.error ?? 'no nvidia-smi'})`;
  return `${g.count}× ${g.models.join(', ')}, driver ${g.driverVersion ?? DASH}, CUDA ${g.cudaVersion ?? DASH}`;
}

export function engineText(r: BenchReport): string {
  const e = r.environment['engine'] as { kind: string | null; version: string | null };
  return `${e.kind ?? 'unknown engine'} ${e.version ?? '(no /version)'}`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
