/**
 * The route table: which paths are metered in depth, and the bounded `route` label every
 * forwarded request gets. A path not listed is still forwarded; its label is `other`.
 */

export interface RouteInfo {
  route: string;
  operation: string;
  metered: boolean;
}

const TABLE: Record<string, RouteInfo> = {
  '/v1/chat/completions': { route: 'chat_completions', operation: 'chat', metered: true },
  '/v1/completions': { route: 'completions', operation: 'text_completion', metered: true },
  '/v1/embeddings': { route: 'embeddings', operation: 'embeddings', metered: false },
  '/v1/models': { route: 'models', operation: 'other', metered: false },
  '/v1/responses': { route: 'responses', operation: 'other', metered: false },
  '/health': { route: 'health', operation: 'other', metered: false },
  '/version': { route: 'version', operation: 'other', metered: false },
  '/metrics': { route: 'engine_metrics', operation: 'other', metered: false },
};

const OTHER: RouteInfo = { route: 'other', operation: 'other', metered: false };

/** Every value the route label can take (for cardinality tests and README). */
export const ROUTE_LABELS = [...new Set([...Object.values(TABLE).map((r) => r.route), OTHER.route])];

export function routeFor(path: string): RouteInfo {
  return TABLE[path] ?? TABLE[path.replace(/\/+$/, '')] ?? OTHER;
}

const LABEL_INDEX = new Map(ROUTE_LABELS.map((r, i) => [r, i]));

/** A route label's position in ROUTE_LABELS (`other`'s for anything else): per-route counts travel as arrays. */
export function routeLabelIndex(label: string): number {
  return LABEL_INDEX.get(label) ?? LABEL_INDEX.get(OTHER.route)!;
}

/** The route info behind a route label (for records the metrics side makes itself). */
export function routeByLabel(label: string): RouteInfo {
  return Object.values(TABLE).find((r) => r.route === label) ?? OTHER;
}
