/**
 * `nvidia-smi -q -x` as the fake prints it: the shape of nvidia-smi's XML log (root
 * `nvidia_smi_log`, driver and CUDA versions, one `gpu` element per board keyed by its PCI
 * bus id) with the few fields a reader of static facts looks for. The element names follow
 * nvidia-smi's DTD as far as they go here; the layout is this fake's, not from a capture.
 */
import type { QueryGpu } from './format.js';

export interface XmlLog {
  driverVersion: string;
  cudaVersion: string;
  /** GPUs on the node (attached_gpus), even when -i shows fewer. */
  attached: number;
  now: Date;
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function gpuXml(g: QueryGpu, architecture: string): string[] {
  const r = g.reading;
  const used = Math.round(r.fbMiB);
  return [
    `\t<gpu id="${g.pciBusId}">`,
    `\t\t<product_name>${escape(g.name)}</product_name>`,
    `\t\t<product_brand>NVIDIA</product_brand>`,
    `\t\t<product_architecture>${architecture}</product_architecture>`,
    `\t\t<uuid>${g.uuid}</uuid>`,
    `\t\t<minor_number>${g.index}</minor_number>`,
    `\t\t<pci>`,
    `\t\t\t<pci_bus_id>${g.pciBusId}</pci_bus_id>`,
    `\t\t</pci>`,
    `\t\t<fb_memory_usage>`,
    `\t\t\t<total>${g.memoryMiB} MiB</total>`,
    `\t\t\t<used>${used} MiB</used>`,
    `\t\t\t<free>${g.memoryMiB - used} MiB</free>`,
    `\t\t</fb_memory_usage>`,
    `\t\t<utilization>`,
    `\t\t\t<gpu_util>${Math.round(r.smPct)} %</gpu_util>`,
    `\t\t\t<memory_util>${Math.round(r.memPct)} %</memory_util>`,
    `\t\t</utilization>`,
    `\t\t<temperature>`,
    `\t\t\t<gpu_temp>${Math.round(r.tempC)} C</gpu_temp>`,
    `\t\t\t<memory_temp>${r.memTempC === null ? 'N/A' : `${Math.round(r.memTempC)} C`}</memory_temp>`,
    `\t\t</temperature>`,
    `\t\t<gpu_power_readings>`,
    `\t\t\t<power_draw>${r.powerW.toFixed(2)} W</power_draw>`,
    `\t\t\t<current_power_limit>${g.powerLimitW.toFixed(2)} W</current_power_limit>`,
    `\t\t</gpu_power_readings>`,
    `\t\t<max_clocks>`,
    `\t\t\t<sm_clock>${g.maxSmClockMHz} MHz</sm_clock>`,
    `\t\t\t<mem_clock>${g.memClockMHz} MHz</mem_clock>`,
    `\t\t</max_clocks>`,
    `\t</gpu>`,
  ];
}

/** The architecture nvidia-smi names for the fake's models (by name; the fake's guess for others). */
function architectureOf(name: string): string {
  if (/H100|H200|GH200/.test(name)) return 'Hopper';
  if (/A100|A10|A30/.test(name)) return 'Ampere';
  if (/L4|L40|RTX 40/.test(name)) return 'Ada Lovelace';
  return 'Hopper';
}

export function queryXml(log: XmlLog, gpus: readonly QueryGpu[]): string {
  const lines = [
    '<?xml version="1.0" ?>',
    '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
    '<nvidia_smi_log>',
    `\t<timestamp>${log.now.toUTCString()}</timestamp>`,
    `\t<driver_version>${escape(log.driverVersion)}</driver_version>`,
    `\t<cuda_version>${escape(log.cudaVersion)}</cuda_version>`,
    `\t<attached_gpus>${log.attached}</attached_gpus>`,
    ...gpus.flatMap((g) => gpuXml(g, architectureOf(g.name))),
    '</nvidia_smi_log>',
  ];
  return lines.join('\n') + '\n';
}
