/**
 * Which models each upstream serves, as the one model-list poller on the metrics side reads
 * them (metrics/models.ts) and hands them to the proxy loops, which route by them
 * (proxy/upstreams.ts). Part of the contract between the two sides, as the record is: neither
 * imports the other. docs/architecture.md says why there is one poller and where it runs.
 */

/** One entry of an upstream's `GET /v1/models` `data` list, as it answered (the merged list serves it as is). */
export interface ModelEntry {
  id: string;
  [field: string]: unknown;
}

/** Each upstream's last list that answered, by its index in the upstream list; null: none has answered yet. */
export type ModelLists = readonly (readonly ModelEntry[] | null)[];

/** At most this many entries of one upstream's list are kept (a list of thousands cannot blow up routing or the merged answer). */
export const MAX_LISTED = 100;
