/**
 * Which GPUs serve which upstream (issue 26), as pure functions: the rows of the join series
 * `infermeter_gpu_engine_info{gpu, uuid, upstream} 1`.
 *
 * An upstream's GPUs come from its `gpus:` setting (indexes or UUIDs) when given. Otherwise,
 * for an upstream on this machine, they are the GPUs on which nvidia-smi
 * `--query-compute-apps=pid,gpu_uuid` names a process of the process tree that listens on
 * the upstream's port (lib/proc-ports.ts). A remote upstream without `gpus:` gets no rows.
 */
import { queryValue } from './query.js';

export interface GpuId {
  index: number;
  uuid: string;
}

export interface ComputeApp {
  pid: number;
  uuid: string;
}

export interface AttributionTarget {
  name: string;
  /** As configured: indexes or UUIDs; empty: automatic. */
  gpus: readonly string[];
  /** The processes serving its local port (null: not local, or not looked up). */
  tree: ReadonlySet<number> | null;
}

export interface JoinRow {
  gpu: string;
  uuid: string;
  upstream: string;
}

/** `--query-compute-apps=pid,gpu_uuid --format=csv,noheader,nounits`; a header line, blanks and malformed rows are skipped. */
export function parseComputeApps(text: string): ComputeApp[] {
  const out: ComputeApp[] = [];
  for (const line of text.split('\n')) {
    const [pidCell, uuidCell] = line.split(',').map((c) => c.trim());
    const pid = Number(pidCell);
    const uuid = queryValue(uuidCell ?? '');
    if (!Number.isInteger(pid) || pid <= 0 || uuid === null || !/^(GPU|MIG)-/.test(uuid)) continue;
    out.push({ pid, uuid });
  }
  return out;
}

/** The join rows, one per (GPU, upstream), sorted by GPU index then upstream order. Unknown indexes/UUIDs in gpus: are left out. */
export function joinRows(targets: readonly AttributionTarget[], gpus: readonly GpuId[], apps: readonly ComputeApp[]): JoinRow[] {
  const byIndex = new Map(gpus.map((g) => [String(g.index), g]));
  const byUuid = new Map(gpus.map((g) => [g.uuid, g]));
  const rows: { g: GpuId; order: number; upstream: string }[] = [];
  targets.forEach((t, order) => {
    const mine = new Set<GpuId>();
    if (t.gpus.length > 0) {
      for (const id of t.gpus) {
        const g = byIndex.get(id) ?? byUuid.get(id);
        if (g) mine.add(g);
      }
    } else if (t.tree) {
      for (const a of apps) {
        const g = byUuid.get(a.uuid);
        if (g && t.tree.has(a.pid)) mine.add(g);
      }
    }
    for (const g of mine) rows.push({ g, order, upstream: t.name });
  });
  rows.sort((a, b) => a.g.index - b.g.index || a.order - b.order);
  return rows.map((r) => ({ gpu: String(r.g.index), uuid: r.g.uuid, upstream: r.upstream }));
}

/** Configured GPU ids that match no GPU on this machine (a typo in gpus:), for one warning. */
export function unmatchedGpus(targets: readonly AttributionTarget[], gpus: readonly GpuId[]): string[] {
  const known = new Set([...gpus.map((g) => String(g.index)), ...gpus.map((g) => g.uuid)]);
  return targets.flatMap((t) => t.gpus.filter((id) => !known.has(id)).map((id) => `${t.name}: ${id}`));
}
