/**
 * How the fake's dmon differs by driver branch, as data. What is from public text (see
 * test/fixtures/SOURCES.md): 535-series drivers monitor only 4 GPUs unless
 * NVSMI_SHOW_ALL_DEVICES=1 and print a warning saying so; newer drivers monitor up to 16;
 * `--gpm-metrics` exists on Hopper-era drivers. Which branch first had `--gpm-metrics` and
 * `--gpm-options` is this fake's choice (535 and 550), not checked against real drivers.
 */
import { GPM_COLUMNS } from './format.js';

export const FOUR_GPU_WARNING =
  'WARNING: Only monitoring up to 4 GPUs is supported by default. Set NVSMI_SHOW_ALL_DEVICES=1 to increase the limit up to 16 GPUs.';

export const MAX_MONITORED = 16;

export interface DriverCaps {
  gpmMetrics: boolean;
  gpmOptions: boolean;
  /** How many GPUs one dmon shows. */
  monitorLimit: number;
  /** Printed before the first header when the limit cut GPUs off. */
  limitWarning: string | null;
}

export function driverCaps(version: string, env: NodeJS.ProcessEnv): DriverCaps {
  const major = Number.parseInt(version, 10) || 0;
  const allDevices = env['NVSMI_SHOW_ALL_DEVICES'] === '1';
  const limited = major <= 535 && !allDevices;
  return {
    gpmMetrics: major >= 535,
    gpmOptions: major >= 550,
    monitorLimit: limited ? 4 : MAX_MONITORED,
    limitWarning: limited ? FOUR_GPU_WARNING : null,
  };
}

const GPM_NAMES: Record<number, string> = {
  1: 'Graphics Activity', 2: 'SM Activity', 3: 'SM Occupancy', 5: 'Tensor Activity', 10: 'DRAM Activity', 13: 'FP16 Activity',
  20: 'PCIe TX', 21: 'PCIe RX', 60: 'NVLink Total RX', 61: 'NVLink Total TX',
};

/** The -s groups as the fake's help lists them, one `letter - name` line each (the fake's wording). */
const DMON_GROUP_NAMES: readonly [string, string][] = [
  ['p', 'Power Usage and Temperature'], ['u', 'Utilization'], ['c', 'Proc and Mem Clocks'], ['v', 'Power and Thermal Violations'],
  ['m', 'FB, Bar1 and CC Protected Memory'], ['e', 'ECC Errors and PCIe Replay errors'], ['t', 'PCIe Rx and Tx Throughput'],
];

/** `nvidia-smi dmon -h` as the fake prints it: the flags it takes, GPM ids as "name = id" lines (layout not from a capture). */
export function dmonHelp(caps: DriverCaps): string {
  const lines = [
    'nvidia-smi dmon -- Device monitoring (infermeter fake).',
    '',
    '    -i,   --id=            Comma separated Enumeration index, PCI bus ID or UUID',
    '    -d,   --delay=         Collection delay/interval in seconds [default=1sec, minimum=1sec]',
    '    -c,   --count=         Collect specified number of samples and exit',
    '    -s,   --select=        One or more metrics [default=puc]',
    '                           Can be any of the following:',
    ...DMON_GROUP_NAMES.map(([l, name]) => `                               ${l} - ${name}`),
    '    -o,   --options=       One or more from the following: D - Include Date (YYYYMMDD), T - Include Time (HH:MM:SS)',
  ];
  if (caps.gpmMetrics) {
    lines.push('    --gpm-metrics=          Comma-separated list of GPM metrics (no space in between) to watch', '                            Available metrics:');
    for (const id of Object.keys(GPM_COLUMNS).map(Number)) lines.push(`                              ${GPM_NAMES[id]!.padEnd(28)}= ${id}`);
  }
  if (caps.gpmOptions) lines.push('    --gpm-options=          Options of GPM metrics: d - display device metrics, m - display MIG metrics, dm - both');
  lines.push('', `Monitoring is limited to a maximum of ${MAX_MONITORED} devices.`);
  return lines.join('\n') + '\n';
}
