/**
 * The route table: which paths are metered in depth, and the bounded `route` label every
 * forwarded request gets. A path not listed is still forwarded; its label is `other`.
 */

/** The generation APIs metered in depth; each is one row of event facts (chat's in lib/events.ts, the typed ones in lib/api-events.ts). */
export const APIS = ['chat', 'completions', 'messages', 'responses'] as const;
export type ApiName = (typeof APIS)[number];

export interface RouteInfo {
  route: string;
  /** gen_ai.operation.name (OTel GenAI): the Messages and Responses APIs are `chat` operations. */
  operation: string;
  metered: boolean;
  /** The API whose events the route's responses carry; null for a route that is not a generation. */
  api: ApiName | null;
  /** Not metered, but its small JSON body names the model: read for the model label and routing (token counting). */
  readsModel?: boolean;
  /**
   * Asks the server about itself (its model list, health, version, metrics), not a model:
   * counted by route like every forwarded request, never as a model's traffic (no model row on
   * the status page, no share of energy, no SLO verdict). A benchmark or a Prometheus pointed at
   * the proxy port polls these paths; they are not load.
   */
  aboutServer?: boolean;
}

const TABLE: Record<string, RouteInfo> = {
  '/v1/chat/completions': { route: 'chat_completions', operation: 'chat', metered: true, api: 'chat' },
  '/v1/completions': { route: 'completions', operation: 'text_completion', metered: true, api: 'completions' },
  '/v1/messages': { route: 'messages', operation: 'chat', metered: true, api: 'messages' },
  '/v1/responses': { route: 'responses', operation: 'chat', metered: true, api: 'responses' },
  // Token counting generates nothing: counted by route, never timed.
  '/v1/messages/count_tokens': { route: 'messages_count_tokens', operation: 'other', metered: false, api: null, readsModel: true },
  '/v1/responses/input_tokens': { route: 'responses_input_tokens', operation: 'other', metered: false, api: null, readsModel: true },
  '/v1/embeddings': { route: 'embeddings', operation: 'embeddings', metered: false, api: null },
  '/v1/models': { route: 'models', operation: 'other', metered: false, api: null, aboutServer: true },
  '/health': { route: 'health', operation: 'other', metered: false, api: null, aboutServer: true },
  '/version': { route: 'version', operation: 'other', metered: false, api: null, aboutServer: true },
  '/metrics': { route: 'engine_metrics', operation: 'other', metered: false, api: null, aboutServer: true },
};

const OTHER: RouteInfo = { route: 'other', operation: 'other', metered: false, api: null };

/** Every value the route label can take (for cardinality tests and README). */
export const ROUTE_LABELS = [...new Set([...Object.values(TABLE).map((r) => r.route), OTHER.route])];

/**
 * The `api` label of the latency histograms: the route labels of the metered generation routes,
 * exactly these (chat_completions, completions, messages, responses). Messages and Responses are
 * `chat` operations, so the operation alone cannot tell their latencies apart.
 */
export const API_LABELS: readonly string[] = Object.values(TABLE).filter((r) => r.metered).map((r) => r.route);
const API_LABEL_SET: ReadonlySet<string> = new Set(API_LABELS);

/** The `api` label of a record's route, or null for a route that is not a metered generation. */
export function apiLabelOf(route: string): string | null {
  return API_LABEL_SET.has(route) ? route : null;
}

export function routeFor(path: string): RouteInfo {
  return TABLE[path] ?? TABLE[path.replace(/\/+$/, '')] ?? OTHER;
}

/** The route labels of requests about the server itself (RouteInfo.aboutServer): never a model's traffic. */
export const ABOUT_SERVER_ROUTES: ReadonlySet<string> = new Set(Object.values(TABLE).filter((r) => r.aboutServer).map((r) => r.route));

const LABEL_INDEX = new Map(ROUTE_LABELS.map((r, i) => [r, i]));

/** A route label's position in ROUTE_LABELS (`other`'s for anything else): per-route counts travel as arrays. */
export function routeLabelIndex(label: string): number {
  return LABEL_INDEX.get(label) ?? LABEL_INDEX.get(OTHER.route)!;
}

/** The route info behind a route label (for records the metrics side makes itself). */
export function routeByLabel(label: string): RouteInfo {
  return Object.values(TABLE).find((r) => r.route === label) ?? OTHER;
}
