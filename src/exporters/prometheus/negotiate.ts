/**
 * Which exposition a scraper's Accept header asks for: the protobuf one, only when it names
 * MetricFamily in delimited encoding with a weight no lower than any text form infermeter
 * would otherwise answer with. Prometheus with native histograms on lists the protobuf type
 * first; without them it never lists it. OpenMetrics text (which carries exemplars) goes to a
 * scraper that weighs it above the 0.0.4 text (Prometheus 2.x lists it first); the 0.0.4 text
 * stays what every other client gets, byte for byte as before.
 */

export type Exposition = 'protobuf' | 'openmetrics' | 'text';

export function chooseExposition(accept: string | undefined): Exposition {
  if (!accept) return 'text';
  let proto = 0;
  let text = 0;
  let om = 0;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    const p = new Map(params.map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i).trim().toLowerCase(), kv.slice(i + 1).trim().replace(/^"|"$/g, '')] as const;
    }));
    const q = p.has('q') ? Number(p.get('q')) : 1;
    if (!(q > 0)) continue;
    const t = type!.toLowerCase();
    if (t === 'application/vnd.google.protobuf') {
      if (p.get('proto') === 'io.prometheus.client.MetricFamily' && p.get('encoding') === 'delimited') proto = Math.max(proto, q);
    } else if (t === 'application/openmetrics-text') {
      om = Math.max(om, q);
    } else if (t === 'text/plain' || t === 'text/*' || t === '*/*') {
      text = Math.max(text, q);
    }
  }
  if (proto > 0 && proto >= text && proto >= om) return 'protobuf';
  return om > 0 && om > text ? 'openmetrics' : 'text';
}
