/**
 * nvidia-smi's output formats, as the fake prints them: dmon's header, units line and rows
 * (the layout of current drivers, byte for byte as in the captured fixtures), and
 * `--query-gpu` CSV. Column groups are data: `-s` letters select them, in the order given.
 */
import type { Reading } from './models.js';

export interface FakeColumn {
  name: string;
  unit: string;
  value(r: Reading, ctx: RowContext): number | null;
  /** Cell width without the leading space: 6 for the -s groups, 10 for GPM columns. */
  width?: number;
}

export interface RowContext {
  ecc: boolean;
  /** The board has GPM and two samples exist to compare (the first round prints "-"). */
  gpm: boolean;
  nvlink: boolean;
}

const round = (v: number) => Math.round(v);

export const DMON_GROUPS: Record<string, readonly FakeColumn[]> = {
  p: [
    { name: 'pwr', unit: 'W', value: (r) => round(r.powerW) },
    { name: 'gtemp', unit: 'C', value: (r) => round(r.tempC) },
    { name: 'mtemp', unit: 'C', value: (r) => (r.memTempC === null ? null : round(r.memTempC)) },
  ],
  u: [
    { name: 'sm', unit: '%', value: (r) => round(r.smPct) },
    { name: 'mem', unit: '%', value: (r) => round(r.memPct) },
    { name: 'enc', unit: '%', value: () => 0 },
    { name: 'dec', unit: '%', value: () => 0 },
    { name: 'jpg', unit: '%', value: () => 0 },
    { name: 'ofa', unit: '%', value: () => 0 },
  ],
  c: [
    { name: 'mclk', unit: 'MHz', value: (r) => round(r.memClockMHz) },
    { name: 'pclk', unit: 'MHz', value: (r) => round(r.smClockMHz) },
  ],
  v: [
    { name: 'pviol', unit: '%', value: (r) => round(r.powerViolationPct) },
    { name: 'tviol', unit: 'bool', value: (r) => (r.thermalViolation ? 1 : 0) },
  ],
  m: [
    { name: 'fb', unit: 'MB', value: (r) => round(r.fbMiB) },
    { name: 'bar1', unit: 'MB', value: (r) => round(r.bar1MiB) },
    { name: 'ccpm', unit: 'MB', value: () => 0 },
  ],
  e: [
    { name: 'sbecc', unit: 'errs', value: (_r, c) => (c.ecc ? 0 : null) },
    { name: 'dbecc', unit: 'errs', value: (_r, c) => (c.ecc ? 0 : null) },
    { name: 'pci', unit: 'errs', value: () => 0 },
  ],
  t: [
    { name: 'rxpci', unit: 'MB/s', value: (r) => round(r.rxMBps) },
    { name: 'txpci', unit: 'MB/s', value: (r) => round(r.txMBps) },
  ],
};

const gpmPct = (name: string, pick: (g: Reading['gpm']) => number): FakeColumn => ({
  name, unit: 'GPM:%', width: 10, value: (r, c) => (c.gpm ? round(pick(r.gpm)) : null),
});
const gpmRate = (name: string, pick: (g: Reading['gpm']) => number, nvlink = false): FakeColumn => ({
  name, unit: 'GPM:MB/s', width: 10, value: (r, c) => (c.gpm && (!nvlink || c.nvlink) ? round(pick(r.gpm)) : null),
});

/**
 * `--gpm-metrics` ids the fake knows, with the column name NVML gives each (see
 * test/fixtures/SOURCES.md). The `GPM:%` units line is from a capture; `GPM:MB/s` for the
 * PCIe and NVLink rates is this fake's guess (no capture shows it).
 */
export const GPM_COLUMNS: Readonly<Record<number, FakeColumn>> = {
  1: gpmPct('gract', (g) => g.graphicsPct),
  2: gpmPct('smutil', (g) => g.smActivePct),
  3: gpmPct('smocc', (g) => g.smOccupancyPct),
  5: gpmPct('mmaact', (g) => g.tensorPct),
  10: gpmPct('dram', (g) => g.dramPct),
  13: gpmPct('fp16', (g) => g.fp16Pct),
  20: gpmRate('pcitx', (g) => g.pcieTxMiBps),
  21: gpmRate('pcirx', (g) => g.pcieRxMiBps),
  60: gpmRate('nvlrx', (g) => g.nvlinkRxMiBps, true),
  61: gpmRate('nvltx', (g) => g.nvlinkTxMiBps, true),
};

/** dmon's default when -s is not given. */
export const DEFAULT_GROUPS = 'puc';

export function dmonColumns(letters: string): FakeColumn[] {
  const out: FakeColumn[] = [];
  for (const l of new Set(letters)) {
    const g = DMON_GROUPS[l];
    if (!g) throw new Error(`unknown dmon -s group "${l}"`);
    out.push(...g);
  }
  return out;
}

export interface Prefix {
  date: boolean;
  time: boolean;
}

/** `-o` letters: D date, T time; printed date first whatever the order given. */
export function parsePrefix(letters: string): Prefix {
  return { date: /D/i.test(letters), time: /T/i.test(letters) };
}

const CELL = 12;

export function dmonHeader(cols: readonly FakeColumn[], prefix: Prefix): [string, string] {
  const names = cols.map((c) => ' ' + c.name.padStart(c.width ?? 6)).join('');
  const units = cols.map((c) => ' ' + c.unit.padStart(c.width ?? 6)).join('');
  if (!prefix.date && !prefix.time) return [`# gpu${names} `, `# Idx${units} `];
  const labels: [string, string][] = [];
  if (prefix.date) labels.push(['Date', 'YYYYMMDD']);
  if (prefix.time) labels.push(['Time', 'HH:MM:SS']);
  const head = labels.map(([l], i) => ((i === 0 ? '#' : '') + l).padEnd(CELL)).join('');
  const unit = labels.map(([, u], i) => ((i === 0 ? '#' : '') + u).padEnd(CELL)).join('');
  return [`${head}gpu${names} `, `${unit}Idx${units} `];
}

export function dmonRow(gpu: number, values: readonly (number | null)[], prefix: Prefix, now: Date, widths?: readonly number[]): string {
  const cells = values.map((v, i) => ' ' + (v === null ? '-' : String(v)).padStart(widths?.[i] ?? 6)).join('');
  if (!prefix.date && !prefix.time) return `${String(gpu).padStart(5)}${cells} `;
  const stamps: string[] = [];
  if (prefix.date) stamps.push(`${now.getFullYear()}${two(now.getMonth() + 1)}${two(now.getDate())}`);
  if (prefix.time) stamps.push(`${two(now.getHours())}:${two(now.getMinutes())}:${two(now.getSeconds())}`);
  const head = stamps.map((s, i) => ((i === 0 ? ' ' : '') + s).padEnd(CELL)).join('');
  return `${head}${String(gpu).padStart(3)}${cells} `;
}

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/** One --query-gpu field: its unit (shown in the header and after values unless nounits) and value. */
export interface QueryField {
  unit: string | null;
  value(g: QueryGpu): string | number | null;
}

export interface QueryGpu {
  index: number;
  uuid: string;
  name: string;
  driverVersion: string;
  pciBusId: string;
  memoryMiB: number;
  powerLimitW: number;
  maxSmClockMHz: number;
  memClockMHz: number;
  count: number;
  reading: Reading;
  hbm: boolean;
  ecc: boolean;
}

const fixed2 = (v: number) => v.toFixed(2);

export const QUERY_FIELDS: Record<string, QueryField> = {
  index: { unit: null, value: (g) => g.index },
  count: { unit: null, value: (g) => g.count },
  uuid: { unit: null, value: (g) => g.uuid },
  name: { unit: null, value: (g) => g.name },
  driver_version: { unit: null, value: (g) => g.driverVersion },
  'pci.bus_id': { unit: null, value: (g) => g.pciBusId },
  'memory.total': { unit: 'MiB', value: (g) => g.memoryMiB },
  'memory.used': { unit: 'MiB', value: (g) => Math.round(g.reading.fbMiB) },
  'memory.free': { unit: 'MiB', value: (g) => g.memoryMiB - Math.round(g.reading.fbMiB) },
  'utilization.gpu': { unit: '%', value: (g) => Math.round(g.reading.smPct) },
  'utilization.memory': { unit: '%', value: (g) => Math.round(g.reading.memPct) },
  'temperature.gpu': { unit: null, value: (g) => Math.round(g.reading.tempC) },
  'temperature.memory': { unit: null, value: (g) => (g.reading.memTempC === null ? null : Math.round(g.reading.memTempC)) },
  'power.draw': { unit: 'W', value: (g) => fixed2(g.reading.powerW) },
  'power.limit': { unit: 'W', value: (g) => fixed2(g.powerLimitW) },
  'clocks.gr': { unit: 'MHz', value: (g) => Math.round(g.reading.smClockMHz) },
  'clocks.sm': { unit: 'MHz', value: (g) => Math.round(g.reading.smClockMHz) },
  'clocks.mem': { unit: 'MHz', value: (g) => g.memClockMHz },
  'clocks.max.gr': { unit: 'MHz', value: (g) => g.maxSmClockMHz },
  'clocks.max.mem': { unit: 'MHz', value: (g) => g.memClockMHz },
  'fan.speed': { unit: '%', value: (g) => (g.hbm ? null : 30) },
  pstate: { unit: null, value: (g) => (g.reading.smPct > 0 ? 'P0' : 'P8') },
  'clocks_throttle_reasons.active': { unit: null, value: (g) => (g.reading.powerViolationPct > 0 ? '0x0000000000000004' : '0x0000000000000001') },
  // Static facts a device run records (scripts/device/run.sh); values are the fake's, by board kind.
  compute_cap: { unit: null, value: (g) => (g.hbm ? (g.name.includes('A100') ? '8.0' : '9.0') : '8.9') },
  'pcie.link.gen.max': { unit: null, value: (g) => (g.hbm && !g.name.includes('A100') ? 5 : 4) },
  'pcie.link.width.max': { unit: null, value: () => 16 },
  'ecc.mode.current': { unit: null, value: (g) => (g.ecc ? 'Enabled' : null) },
  'mig.mode.current': { unit: null, value: (g) => (g.hbm ? 'Disabled' : null) },
  vbios_version: { unit: null, value: () => '00.00.00.00.01' },
  persistence_mode: { unit: null, value: () => 'Enabled' },
};

export interface CsvFormat {
  header: boolean;
  units: boolean;
}

/** `--format=csv[,noheader][,nounits]`; null when it is not a csv format. */
export function parseCsvFormat(spec: string): CsvFormat | null {
  const parts = spec.split(',').map((s) => s.trim());
  if (parts[0] !== 'csv' || parts.slice(1).some((p) => p !== 'noheader' && p !== 'nounits')) return null;
  return { header: !parts.includes('noheader'), units: !parts.includes('nounits') };
}

export function queryCsv(fields: readonly string[], gpus: readonly QueryGpu[], format: CsvFormat): string {
  const defs = fields.map((f) => QUERY_FIELDS[f]!);
  const lines: string[] = [];
  // nvidia-smi keeps the [unit] in the header even with nounits.
  if (format.header) lines.push(fields.map((f, i) => (defs[i]!.unit ? `${f} [${defs[i]!.unit}]` : f)).join(', '));
  for (const g of gpus) {
    lines.push(defs.map((d) => {
      const v = d.value(g);
      if (v === null) return '[N/A]';
      return format.units && d.unit ? `${v} ${d.unit}` : String(v);
    }).join(', '));
  }
  return lines.join('\n') + '\n';
}
