/** The shape of a Prometheus rule file, as plain data the YAML renderer writes out. */

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  /** Evaluation interval; omitted means Prometheus' global one. */
  interval?: string;
  rules: Rule[];
}

export interface RulesOptions {
  /** Scale every window and `for:` down by 60 (see windows.ts). */
  testWindows: boolean;
  /** The scrape job name infermeter's metrics listener is scraped under (for `up`). */
  job: string;
  /** InfermeterLoadNearCapacity fires when infermeter_load_ratio stays above this (rules-headroom.ts). */
  loadRatioAlert: number;
}

export const DEFAULT_RULES_OPTIONS: RulesOptions = { testWindows: false, job: 'infermeter', loadRatioAlert: 0.8 };
