#!/usr/bin/env node
/**
 * A fake `nvidia-smi` for machines without a GPU (tests, demos, benchmarks): answers
 * `dmon`, `--query-gpu=… --format=csv[,noheader][,nounits]`, `--query-compute-apps=…` (and `-L`) in the real
 * formats, for FAKE_NVIDIA_SMI_GPUS GPUs of FAKE_NVIDIA_SMI_MODEL, following a simulator's
 * load (FAKE_NVIDIA_SMI_SIM_URL; a simulator per group of GPUs: FAKE_NVIDIA_SMI_SIM_URLS), or replaying a captured dmon file
 * (FAKE_NVIDIA_SMI_REPLAY), with optional faults (FAKE_NVIDIA_SMI_FAULT). See docs/gpu.md.
 * Exits 0 on SIGTERM/SIGINT and when its reader goes away.
 */
import { parseInvocation, readSettings, UsageError, type FakeSettings, type Invocation } from './args.js';
import { generated, parsePrefix, replayed, withFault, writeLines, type Line } from './emit.js';
import { GPM_COLUMNS, queryCsv, type QueryGpu } from './format.js';
import { dmonHelp, driverCaps, type DriverCaps } from './driver.js';
import { GpuLoads, LoadSource } from './load.js';
import { queryXml } from './xml.js';
import { computeAppsCsv } from './compute-apps.js';
import { findModel, seeded, SimGpu, type Load } from './models.js';

export async function fakeNvidiaSmi(argv: readonly string[], env: NodeJS.ProcessEnv, write: (s: string) => void): Promise<number> {
  const settings = readSettings(env);
  const inv = parseInvocation(argv);
  const noise = seeded(settings.seed);
  const model = findModel(settings.model);
  const all = Array.from({ length: settings.gpus }, (_, i) => new SimGpu(i, model, noise, settings.throttleGpus === null || settings.throttleGpus.includes(i) ? settings.throttle : 'none'));
  const caps = driverCaps(settings.driverVersion, env);
  const ids = inv.kind === 'usage' || inv.kind === 'dmon-help' ? null : inv.ids;
  if (ids) {
    const missing = ids.find((i) => i >= all.length);
    if (missing !== undefined) throw new UsageError(`No devices were found matching id ${missing}.`);
  }
  const gpus = ids ? all.filter((g) => ids.includes(g.index)) : all;
  const load = new GpuLoads(new LoadSource(settings.simUrl, settings.load), settings.simUrls, settings.load);
  switch (inv.kind) {
    case 'usage':
      // Plain nvidia-smi opens with this banner line (versions); readers take CUDA's from it.
      write(`| NVIDIA-SMI ${settings.driverVersion}    Driver Version: ${settings.driverVersion}    CUDA Version: ${settings.cudaVersion} |\n`);
      write('fake nvidia-smi (infermeter): supports dmon [-s -o -d -c -i --gpm-metrics --gpm-options -h], --query-gpu=… --format=csv[,noheader][,nounits], --query-compute-apps=…, -q -x, -L\n');
      return 0;
    case 'dmon-help':
      write(dmonHelp(caps));
      return 0;
    case 'query-xml': {
      await load.start(1000);
      load.stop();
      write(queryXml({ driverVersion: settings.driverVersion, cudaVersion: settings.cudaVersion, attached: all.length, now: new Date() }, gpus.map((g) => queryRow(g, settings, all.length, load.of(g.index)))));
      return 0;
    }
    case 'list':
      for (const g of gpus) write(`GPU ${g.index}: ${model.name} (UUID: ${uuid(settings.seed, g.index)})\n`);
      return 0;
    case 'query': {
      await load.start(1000);
      load.stop();
      write(queryCsv(inv.fields, gpus.map((g) => queryRow(g, settings, all.length, load.of(g.index))), inv.format));
      return 0;
    }
    case 'compute-apps': {
      const rows = settings.computeApps
        .filter((a) => a.gpu < all.length && gpus.some((g) => g.index === a.gpu))
        .map((app) => ({ app, uuid: uuid(settings.seed, app.gpu), busId: busId(app.gpu), name: 'python3' }));
      write(computeAppsCsv(inv.fields, rows, inv.format));
      return 0;
    }
    case 'dmon':
      return dmon(inv, settings, caps, gpus, load, write);
  }
}

async function dmon(inv: Extract<Invocation, { kind: 'dmon' }>, settings: FakeSettings, caps: DriverCaps, all: SimGpu[], load: GpuLoads, write: (s: string) => void): Promise<number> {
  const unsupported = (inv.gpm && !caps.gpmMetrics) || (inv.gpmOptions && !caps.gpmOptions);
  if (unsupported) throw new UsageError(`Invalid combination of input arguments. Please run 'nvidia-smi dmon -h' for help.`);
  if (inv.gpm && settings.gpmReject) throw new UsageError('Failed to start GPM metrics monitoring: Not Supported');
  const gpus = all.slice(0, caps.monitorLimit);
  const warning = gpus.length < all.length && caps.limitWarning ? caps.limitWarning : null;
  const gpm = (inv.gpm ?? []).map((id) => GPM_COLUMNS[id]!);
  const periodMs = settings.periodMs ?? inv.delaySeconds * 1000;
  await load.start(periodMs);
  const prefix = parsePrefix(inv.prefix);
  const make = (groups: string): Generator<Line> =>
    generated({ gpus, groups, prefix, headerEvery: settings.headerEvery, load: (gpu) => load.of(gpu), gpm, warning });
  const source = settings.replay ? replayed(settings.replay, settings.replayLoop) : make(inv.groups);
  let code = 0;
  await writeLines(withFault(source, { fault: settings.fault, after: settings.faultAfter, alternate: () => make(settings.faultColumns) }), {
    periodMs,
    count: inv.count,
    write,
    onCrash: () => {
      process.stderr.write('Failed to process sample: GPU is lost. Reboot the system to recover this GPU\n');
      code = 15;
    },
  });
  load.stop();
  return code;
}

function queryRow(g: SimGpu, s: FakeSettings, count: number, load: Load): QueryGpu {
  return {
    index: g.index,
    uuid: uuid(s.seed, g.index),
    name: g.model.name,
    driverVersion: s.driverVersion,
    pciBusId: busId(g.index),
    memoryMiB: g.model.memoryMiB,
    powerLimitW: g.model.powerLimitW,
    maxSmClockMHz: g.model.maxSmClockMHz,
    memClockMHz: g.model.memClockMHz,
    count,
    reading: g.read(load),
    hbm: g.model.hbm,
    ecc: g.model.ecc,
  };
}

function busId(index: number): string {
  return `00000000:${(0x18 + index * 0x10).toString(16).toUpperCase().padStart(2, '0')}:00.0`;
}

/** A stable, GPU-shaped UUID per (seed, index). */
export function uuid(seed: number, index: number): string {
  const r = seeded(seed * 1000 + index + 1);
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
  return `GPU-${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`;
}

function main(): void {
  const exit = (code: number) => process.exit(code);
  process.on('SIGTERM', () => exit(0));
  process.on('SIGINT', () => exit(0));
  process.stdout.on('error', () => exit(0)); // EPIPE: the reader left, as real dmon would end
  fakeNvidiaSmi(process.argv.slice(2), process.env, (s) => process.stdout.write(s)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const out = err instanceof UsageError && err.onStdout ? process.stdout : process.stderr;
      out.write(err instanceof Error ? `${err.message}\n` : `${String(err)}\n`);
      exit(err instanceof UsageError ? 2 : 1);
    },
  );
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('fake-nvidia-smi.js')) main();
