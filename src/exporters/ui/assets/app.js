/**
 * The status page's script, served as /ui/app.js (app-js.ts reads it; the page loads it as a
 * module). Plain JavaScript for any current browser, compiled into dist/ by the root tsconfig.json
 * and type-checked by the tsconfig.json beside it, with the DOM's types, against the document it
 * reads (status-json.ts StatusDocument). It polls /api/v1/status (every second, or ?refresh=<seconds>),
 * fetching the whole 15 minutes once and then only the new points, and draws with uPlot (served
 * from the package's own node_modules as /ui/uplot.js). Every value from the server is put in
 * the page as text (textContent), never as markup.
 */

/** @typedef {import('../status-json.js').StatusDocument} StatusDocument */
/** @typedef {StatusDocument['models'][number]} ModelStatus */
/** @typedef {StatusDocument['series']} Series */
/** @typedef {NonNullable<ModelStatus['bottleneck']>} Verdict */
/** @typedef {Verdict['evidence'][number]} Evidence */
/** @typedef {Record<string, (number | null)[]>} Columns */
/** @typedef {{ model: string, start: number, end: number, stepMs: number, thresholds: Series['thresholds'], cols: Columns }} Local */
/** @typedef {import('uplot')} Plot */
/** @typedef {import('uplot').Series} PlotSeries */

/** uPlot's IIFE build (/ui/uplot.js, loaded before this) sets a global; absent, the page shows its tables without charts. */
var uPlot = /** @type {Window & { uPlot?: typeof import('uplot') }} */ (window).uPlot;
var params = new URLSearchParams(location.search);
var REFRESH_MS = Math.max(250, (Number(params.get('refresh')) || 1) * 1000);
var MAX_POINTS = 900;
var COLORS = { p50: '#1f77b4', p95: '#ff7f0e', p99: '#d62728', slo: '#555555', req: '#2ca02c', tok: '#9467bd', kv: '#17becf', inflight: '#8c564b' };
var GPU_COLORS = ['#e377c2', '#bcbd22', '#7f7f7f', '#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94', '#f7b6d2', '#dbdb8d', '#9edae5'];
var selected = params.get('model') || '*';
var local = /** @type {Local | null} */ (null); // the selected model's series, kept in the page and extended each poll
var charts = /** @type {Record<string, { key: string, width: number, plot: Plot }>} */ ({});
var filterText = '';
var energy = /** @type {StatusDocument['energy'] | null} */ (null); // the last document's energy part, for its chart

/** @param {string} id */
function $(id) { var e = document.getElementById(id); if (!e) throw new Error('the page has no #' + id); return e; }
/** @template {HTMLElement} T @param {string} id @param {new () => T} kind @returns {T} */
function $as(id, kind) { var e = $(id); if (!(e instanceof kind)) throw new Error('#' + id + ' is not a ' + kind.name); return e; }
/** @template {keyof HTMLElementTagNameMap} K @param {K} tag @param {string | null} [text] @param {string} [cls] */
function el(tag, text, cls) { var e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; }
/** @param {HTMLElement} tr @param {string} text @param {string | null} [field] @param {number | string | null} [value] @param {string} [cls] */
function cell(tr, text, field, value, cls) {
  var td = el('td', text, cls);
  if (field) td.setAttribute('data-field', field);
  if (value != null) td.setAttribute('data-value', String(value));
  tr.appendChild(td);
  return td;
}
var DASH = '\u2013';
/** @param {number | null | undefined} v */
function fmtSeconds(v) {
  if (v == null) return DASH;
  if (v < 0.01) return (v * 1000).toFixed(2) + ' ms';
  if (v < 0.1) return (v * 1000).toFixed(1) + ' ms';
  if (v < 1) return (v * 1000).toFixed(0) + ' ms';
  if (v < 60) return v.toFixed(2) + ' s';
  return (v / 60).toFixed(1) + ' min';
}
/** @param {number | null | undefined} v @param {string} unit @param {number} [digits] */
function fmtNum(v, unit, digits) {
  if (v == null) return DASH;
  var d = digits != null ? digits : (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2);
  return v.toLocaleString(undefined, { minimumFractionDigits: d, maximumFractionDigits: d }) + (unit ? ' ' + unit : '');
}
/** @param {number | null | undefined} v @param {number} [d] */
function fmtPct(v, d) { return v == null ? DASH : (v * 100).toFixed(d == null ? 1 : d) + ' %'; }
/** @param {number | null | undefined} v */
function fmtBytes(v) { return v == null ? DASH : (v / 1073741824).toFixed(1) + ' GiB'; }
/** @param {number | null | undefined} ms */
function fmtTime(ms) { return ms == null ? DASH : new Date(ms).toLocaleTimeString(); }
/** @param {number | null} b */
function burnClass(b) { return b == null ? '' : b >= 14.4 ? 'bad' : b >= 1 ? 'warn' : 'good'; }

/** @param {string} label @param {string} value @param {string} [cls] */
function card(label, value, cls) {
  var c = el('div', null, 'card');
  c.appendChild(el('div', value, 'v' + (cls ? ' ' + cls : '')));
  c.appendChild(el('div', label, 'k'));
  return c;
}

/** @param {StatusDocument} doc */
function renderSummary(doc) {
  var s = $('summary');
  s.textContent = '';
  var req = 0, tok = 0, errors = 0, total = 0;
  /** @type {number | null} */
  var worstP99 = null;
  doc.models.forEach(function (m) {
    req += m.requestsPerSecond; tok += m.outputTokensPerSecond;
    if (m.ttft.p99 != null && (worstP99 == null || m.ttft.p99 > worstP99)) worstP99 = m.ttft.p99;
    outcomeCounts(m).forEach(function (oc) { total += oc[1]; if (oc[0] !== 'ok' && oc[0] !== 'client_abort') errors += oc[1]; });
  });
  s.appendChild(card('requests/s (10 s)', fmtNum(req, 'req/s')));
  s.appendChild(card('output tokens/s (10 s)', fmtNum(tok, 'tok/s')));
  s.appendChild(card('in flight now', fmtNum(doc.inFlight, '', 0)));
  s.appendChild(card('worst TTFT p99 (1 min)', fmtSeconds(worstP99)));
  s.appendChild(card('errors (5 min)', total ? fmtPct(errors / total, 2) : DASH, errors ? 'bad' : ''));
  var kv = doc.engine && doc.engine.kvCacheUsage;
  s.appendChild(card(doc.engines.length > 1 ? 'KV cache (mean of ' + doc.engines.filter(function (e) { return e.up; }).length + ' engines up)' : 'KV cache', fmtPct(kv)));
  var utils = doc.gpus.map(function (g) { return g.utilization; }).filter(function (u) { return u != null; });
  s.appendChild(card('GPU util (mean of ' + utils.length + ')', utils.length ? fmtPct(utils.reduce(function (a, b) { return a + b; }, 0) / utils.length, 0) : DASH));
  if (doc.energy) {
    // Every model together over the energy window: busy joules and cost over output tokens.
    var j = 0, n = 0, cost = 0;
    doc.models.forEach(function (m) { if (m.energy) { j += m.energy.joules; n += m.energy.outputTokens; cost += m.energy.cost || 0; } });
    var cur = doc.energy.currency;
    s.appendChild(card('energy · cost per output token (5 min)', n > 0 ? fmtNum(j / n, 'J', 2) + (cur ? ' · ' + fmtNum((cost / n) * 1e6, cur + '/1M', 2) : '') : DASH));
  }
  var down = doc.collectors.filter(function (c) { return !c.up; });
  var up = card('collectors up', doc.collectors.length ? (doc.collectors.length - down.length) + ' / ' + doc.collectors.length : DASH, down.length ? 'bad' : '');
  if (down.length) up.title = 'down: ' + down.map(function (c) { return c.upstream == null ? c.name : c.name + ' (' + c.upstream + ')'; }).join(', ');
  s.appendChild(up);
}

/** @param {{ outcomes5m: ModelStatus['outcomes5m'] }} m a model's or an API's row @returns {[keyof ModelStatus['outcomes5m'], number][]} each outcome of the last 5 minutes with its count */
function outcomeCounts(m) {
  var counts = m.outcomes5m;
  return /** @type {(keyof typeof counts)[]} */ (Object.keys(counts)).map(function (o) { return [o, counts[o] || 0]; });
}

// The verdict first, with the numbers it was decided from; the hover adds the advice.
/** @type {Record<string, string>} */
var WORD_CASE = { ttft: 'TTFT', tpot: 'TPOT', kv: 'KV', gpu: 'GPU', slo: 'SLO', sm: 'SM', dram: 'DRAM' };
/** A signal's name in words (engineWaiting: engine waiting, ttftP99: TTFT P99); /api/v1/status keeps the names. @param {string} name */
function signalWords(name) {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(' ').map(function (w) {
    var l = w.toLowerCase();
    return WORD_CASE[l] || (/^p\d+$/.test(l) ? l.toUpperCase() : l);
  }).join(' ');
}
/** @param {Evidence} e */
function fmtEvidence(e) {
  var name = signalWords(e.signal);
  if (e.value == null) return name + ' ' + DASH;
  // A count of requests reads as one (engine waiting 0, requests 12), not "0.00 requests".
  var v = e.unit === 's' ? fmtSeconds(e.value) : e.unit === 'ratio' ? (e.value * 100).toFixed(0) + ' %'
    : e.unit === 'requests' ? fmtNum(e.value, '', Number.isInteger(e.value) ? 0 : 1) : fmtNum(e.value, e.unit);
  return name + ' ' + v + ' (' + e.window + ')';
}
/** @type {Record<Verdict['kind'], string>} */
var KIND_CLASS = { none: 'good', idle: '', unknown: '', queue: 'warn', kv_cache: 'warn', prefill: 'warn', decode: 'warn', gpu_throttle: 'bad', upstream_errors: 'bad', proxy: 'bad' };
/** @param {HTMLElement} tr @param {Verdict | null} b */
function bottleneckCell(tr, b) {
  if (!b) return cell(tr, DASH, 'bottleneck', null, 'verdict');
  var td = el('td', null, 'verdict');
  td.setAttribute('data-field', 'bottleneck');
  td.setAttribute('data-value', b.kind);
  var k = el('span', b.kind, 'kind ' + (KIND_CLASS[b.kind] || ''));
  td.appendChild(k);
  var ev = el('span', ' ' + b.evidence.slice(0, 3).map(fmtEvidence).join(' · '), 'evidence');
  ev.setAttribute('data-field', 'evidence');
  td.appendChild(ev);
  td.title = b.summary + ' (since ' + fmtTime(b.since) + ')\n' + b.evidence.map(function (e) { return fmtEvidence(e) + (e.threshold ? ' [' + e.threshold + ']' : '') + (e.basis ? ' ' + e.basis : ''); }).join('\n') +
    '\n\n' + b.advice.map(function (a) { return a.engine + ': ' + a.text; }).join('\n');
  tr.appendChild(td);
  return td;
}

// Headroom (docs/headroom.md): the load ratio and the capacity, or unknown; the hover has why and the fitted figures.
/** @typedef {NonNullable<ModelStatus['capacity']>} Capacity */
/** @param {HTMLElement} tr @param {Capacity | null} c */
function headroomCell(tr, c) {
  if (!c) return cell(tr, DASH, 'headroom', null, 'verdict');
  var known = c.state === 'estimate' && c.loadRatio != null && c.requestsPerSecond != null;
  var text = known ? fmtPct(c.loadRatio, 0) + ' of ' + fmtNum(c.requestsPerSecond, 'req/s') + ' · ' + c.bindingSlo + ' (' + c.bindingLimit + ')' : 'unknown: ' + c.reason;
  var td = cell(tr, text, 'headroom', known ? c.loadRatio : null, 'verdict ' + (!known ? '' : (c.loadRatio || 0) >= 1 ? 'bad' : (c.loadRatio || 0) >= 0.8 ? 'warn' : 'good'));
  td.setAttribute('data-value', known ? String(c.loadRatio) : 'unknown');
  td.title = c.summary + '\n' + c.evidence.map(function (e) { return e.name + ' ' + (e.value == null ? DASH : e.unit === 's' ? fmtSeconds(e.value) : fmtNum(e.value, e.unit)) + (e.basis ? ' (' + e.basis + ')' : ''); }).join('\n');
  return td;
}

/** @param {HTMLElement} tr @param {string} name @param {ModelStatus['ttft']} l */
function latencyCells(tr, name, l) {
  /** @type {('p50' | 'p95' | 'p99')[]} */ (['p50', 'p95', 'p99']).forEach(function (q) { cell(tr, fmtSeconds(l[q]), name + '-' + q, l[q]); });
}

var state = { objective: 0.99 };
/** @param {StatusDocument} doc */
function renderModels(doc) {
  state.objective = doc.objective;
  var tbody = $as('models', HTMLTableElement).tBodies[0];
  tbody.textContent = '';
  var shown = 0;
  doc.models.forEach(function (m) {
    if (filterText && m.model.toLowerCase().indexOf(filterText) < 0) return;
    shown++;
    var tr = el('tr');
    tr.setAttribute('data-model', m.model);
    if (m.model === selected) tr.className = 'selected';
    var name = cell(tr, m.model, 'model', null, 'name');
    name.title = m.model;
    bottleneckCell(tr, m.bottleneck);
    headroomCell(tr, m.capacity);
    cell(tr, fmtNum(m.requestsPerSecond, 'req/s'), 'rps', m.requestsPerSecond);
    cell(tr, fmtNum(m.outputTokensPerSecond, 'tok/s'), 'tps', m.outputTokensPerSecond);
    cell(tr, fmtNum(m.inFlight, '', 0), 'inflight', m.inFlight);
    cell(tr, fmtNum(m.concurrency, ''), 'concurrency', m.concurrency);
    latencyCells(tr, 'ttft', m.ttft); latencyCells(tr, 'tpot', m.tpot); latencyCells(tr, 'e2e', m.e2e);
    var outs = outcomeCounts(m).map(function (oc) { return oc[0] + ' ' + oc[1]; }).join(', ');
    cell(tr, outs || DASH, 'outcomes', null, outcomeCounts(m).some(function (oc) { return oc[0] !== 'ok' && oc[0] !== 'client_abort'; }) ? 'warn' : '');
    // The worst SLO in the cell, every one in the tooltip.
    var worst = /** @type {ModelStatus['slos'][number] | null} */ (null), worstAtt = 1;
    m.slos.forEach(function (s) { if (s.attainment5m != null && (worst == null || s.attainment5m < worstAtt)) { worst = s; worstAtt = s.attainment5m; } });
    var att = worst ? worst.slo + ' ' + fmtPct(worstAtt, 1) : m.slos.length ? DASH : 'no SLO';
    var td = cell(tr, att, 'slo', worst && worstAtt, worst && worstAtt < state.objective ? 'bad' : '');
    td.title = m.slos.map(function (s) { return s.slo + ' ≤ ' + fmtSeconds(s.thresholdSeconds) + ': ' + fmtPct(s.attainment5m, 2) + ' of ' + s.judged5m + ' in 5 min, ' + fmtPct(s.attainment1h, 2) + ' of ' + s.judged1h + ' in 1 h'; }).join('\n');
    var worst5 = /** @type {number | null} */ (null), worst1 = /** @type {number | null} */ (null);
    m.slos.forEach(function (s) {
      if (s.burnRate5m != null && (worst5 == null || s.burnRate5m > worst5)) worst5 = s.burnRate5m;
      if (s.burnRate1h != null && (worst1 == null || s.burnRate1h > worst1)) worst1 = s.burnRate1h;
    });
    cell(tr, (worst5 == null ? DASH : worst5.toFixed(2) + '×') + ' / ' + (worst1 == null ? DASH : worst1.toFixed(2) + '×'), 'burn', worst5, worst5 == null && worst1 == null ? '' : burnClass(Math.max(worst5 || 0, worst1 || 0)));
    energyCell(tr, m.energy, doc.energy ? doc.energy.currency : null);
    prefixCell(tr, m.prefixCache);
    wasteCell(tr, m.waste);
    tr.addEventListener('click', function () { select(m.model); });
    tbody.appendChild(tr);
  });
  $('model-count').textContent = shown + ' of ' + doc.models.length + ' models · sorted by req/s · click a row to chart it';
  $('models-note').textContent = doc.models.length ? '' : 'No requests yet: send traffic through the proxy.';
  var routes = Object.keys(doc.routes5m).sort(function (a, b) { return doc.routes5m[b] - doc.routes5m[a]; });
  $('routes-note').textContent = routes.length ? 'requests by API (route), 5 min: ' + routes.map(function (r) { return r + ' ' + doc.routes5m[r]; }).join(' · ') : '';
  var sel = $as('chart-model', HTMLSelectElement);
  var want = ['*'].concat(doc.models.map(function (m) { return m.model; }));
  var have = Array.prototype.map.call(sel.options, function (o) { return o.value; });
  if (want.join('\n') !== have.join('\n')) {
    sel.textContent = '';
    want.forEach(function (v) { sel.appendChild(new Option(v === '*' ? 'all models' : v, v)); });
  }
  sel.value = want.indexOf(selected) >= 0 ? selected : '*';
}

/** Every model together, one row per generation API: Messages, Responses and chat streams apart. @param {StatusDocument} doc */
function renderApis(doc) {
  var tbody = $as('apis', HTMLTableElement).tBodies[0];
  tbody.textContent = '';
  doc.apis.forEach(function (a) {
    var tr = el('tr');
    tr.setAttribute('data-api', a.api);
    cell(tr, a.api, 'api');
    cell(tr, fmtNum(a.requestsPerSecond, 'req/s'), 'rps', a.requestsPerSecond);
    cell(tr, fmtNum(a.outputTokensPerSecond, 'tok/s'), 'tps', a.outputTokensPerSecond);
    latencyCells(tr, 'ttft', a.ttft); latencyCells(tr, 'tpot', a.tpot); latencyCells(tr, 'e2e', a.e2e);
    var outs = outcomeCounts(a).map(function (oc) { return oc[0] + ' ' + oc[1]; }).join(', ');
    cell(tr, outs || DASH, 'outcomes', null, outcomeCounts(a).some(function (oc) { return oc[0] !== 'ok' && oc[0] !== 'client_abort'; }) ? 'warn' : '');
    tbody.appendChild(tr);
  });
  $('apis-section').hidden = doc.apis.length === 0;
}

/** @param {StatusDocument} doc */
function renderGpus(doc) {
  var tbody = $as('gpus', HTMLTableElement).tBodies[0];
  tbody.textContent = '';
  // Several engines (issue 26): GPUs listed under the engine they serve, one heading row each.
  /** @type {{ key: string, gpus: StatusDocument['gpus'] }[]} */
  var groups = [];
  doc.gpus.forEach(function (g) {
    var key = g.upstreams ? (g.upstreams.length ? g.upstreams.join(', ') : 'no engine') : '';
    var grp = groups.filter(function (x) { return x.key === key; })[0];
    if (!grp) groups.push(grp = { key: key, gpus: [] });
    grp.gpus.push(g);
  });
  groups.forEach(function (grp) {
    if (grp.key !== '') {
      var head = el('tr');
      head.className = 'group';
      head.setAttribute('data-upstream', grp.key);
      var th = el('th');
      th.colSpan = 7;
      th.textContent = 'engine: ' + grp.key;
      head.appendChild(th);
      tbody.appendChild(head);
    }
    grp.gpus.forEach(function (g) { renderGpuRow(tbody, g); });
  });
  $('gpus-note').textContent = doc.gpus.length ? '' : 'No GPU data (GPU collector off, or no nvidia-smi / dcgm-exporter).';
}

/** @param {HTMLElement} tbody @param {StatusDocument['gpus'][number]} g */
function renderGpuRow(tbody, g) {
  {
    var tr = el('tr');
    tr.setAttribute('data-gpu', g.gpu);
    cell(tr, g.gpu, 'gpu');
    cell(tr, g.name || DASH, 'name', null, 'name');
    cell(tr, fmtPct(g.utilization, 0), 'util', g.utilization);
    cell(tr, g.memoryUsedBytes == null ? DASH : fmtBytes(g.memoryUsedBytes) + ' / ' + fmtBytes(g.memoryTotalBytes), 'memory', g.memoryUsedBytes);
    cell(tr, fmtNum(g.powerWatts, 'W', 0), 'power', g.powerWatts);
    cell(tr, fmtNum(g.temperatureCelsius, '°C', 0), 'temp', g.temperatureCelsius);
    var gpm = [g.smActive, g.smOccupancy, g.tensorActive, g.dramActive];
    cell(tr, gpm.every(function (v) { return v == null; }) ? 'not available' : gpm.map(function (v) { return fmtPct(v, 0); }).join(' / '), 'gpm');
    tbody.appendChild(tr);
  }
}

/** One panel per upstream's engine, a dead one named and down. @param {StatusDocument} doc */
function renderEngines(doc) {
  var box = $('engines');
  box.textContent = '';
  if (!doc.engines.length) box.appendChild(el('p', 'no data (engine collector off, or no engine with Prometheus metrics)', 'muted small'));
  doc.engines.forEach(function (e) {
    var panel = el('div', null, 'engine');
    panel.setAttribute('data-upstream', e.upstream);
    var head = el('h3', e.upstream + ' ');
    if (e.engine) head.appendChild(el('span', e.engine + ' ', 'kind'));
    var st = el('span', e.up ? 'up' : 'down', e.up ? 'good' : 'bad');
    st.setAttribute('data-field', 'up');
    head.appendChild(st);
    panel.appendChild(head);
    var dl = el('dl', null, 'kv');
    var rows = e.up ? [
      ['KV-cache usage', fmtPct(e.kvCacheUsage)], ['running', fmtNum(e.running, '', 0)], ['waiting', fmtNum(e.waiting, '', 0)],
      ['preemptions (5 min)', fmtNum(e.preemptions5m, '', 0)], ['prefix-cache hit ratio', fmtPct(e.prefixCacheHitRatio)],
    ] : [['engine', 'its /metrics does not answer']];
    // Client aborts (docs/waste.md): how fast they reached this upstream, and when its engine let go of them.
    var ab = (doc.aborts || []).filter(function (a) { return a.upstream === e.upstream; })[0];
    if (ab && ab.aborts > 0) {
      rows.push(['aborts · propagation P99', ab.aborts + ' · ' + fmtSeconds(ab.propagationP99Seconds)]);
      rows.push(['engine released aborts', ab.releasePending ? 'waiting for its next scrape' : ab.lastReleaseSeconds == null ? DASH : 'within ' + fmtSeconds(ab.lastReleaseSeconds)]);
    }
    rows.forEach(function (r) { dl.appendChild(el('dt', r[0])); dl.appendChild(el('dd', r[1])); });
    panel.appendChild(dl);
    box.appendChild(panel);
  });
}

/** One row per collector instance, the engine collector's named by its upstream. @param {StatusDocument} doc */
function renderCollectors(doc) {
  var tbody = $as('collectors', HTMLTableElement).tBodies[0];
  tbody.textContent = '';
  doc.collectors.forEach(function (c) {
    var tr = el('tr');
    tr.setAttribute('data-collector', c.name);
    if (c.upstream != null) tr.setAttribute('data-upstream', c.upstream);
    cell(tr, c.name);
    cell(tr, c.upstream == null ? DASH : c.upstream, 'upstream', null, 'name');
    cell(tr, c.up ? 'up' : 'down', 'up', c.up ? 1 : 0, c.up ? 'good' : 'bad');
    cell(tr, fmtTime(c.lastSuccessAt));
    cell(tr, fmtSeconds(c.durationSeconds));
    tbody.appendChild(tr);
  });
}

/** @param {StatusDocument} doc */
function renderSlow(doc) {
  var section = $('slow-section');
  if (!doc.slowRequests) { section.hidden = true; return; }
  section.hidden = false;
  var tbody = $as('slow', HTMLTableElement).tBodies[0];
  tbody.textContent = '';
  doc.slowRequests.forEach(function (r) {
    var tr = el('tr');
    cell(tr, fmtTime(r.startedAt)); cell(tr, r.model, null, null, 'name'); cell(tr, r.outcome, null, null, r.outcome === 'ok' ? '' : 'bad');
    cell(tr, fmtSeconds(r.ttft)); cell(tr, fmtSeconds(r.tpot)); cell(tr, fmtSeconds(r.e2e));
    cell(tr, fmtNum(r.inputTokens, '', 0) + ' / ' + fmtNum(r.outputTokens, '', 0)); cell(tr, fmtNum(r.inFlightAtStart, '', 0)); cell(tr, r.traceId || DASH);
    tbody.appendChild(tr);
  });
}

// ---- series kept in the page ------------------------------------------------------
/** @param {Series} s @param {boolean} incremental */
function merge(s, incremental) {
  if (incremental && (!local || local.model !== s.model || s.start !== local.end)) { local = null; return; } // refetch all next time
  /** @type {Local} */
  var l = !incremental || !local ? { model: s.model, start: s.start, end: s.start, stepMs: s.stepMs, thresholds: s.thresholds, cols: {} } : local;
  local = l;
  l.thresholds = s.thresholds;
  var cols = flatten(s);
  var n = s.points;
  Object.keys(cols).forEach(function (k) {
    var have = l.cols[k] || new Array((l.end - l.start) / l.stepMs).fill(null);
    l.cols[k] = have.concat(cols[k]);
  });
  Object.keys(l.cols).forEach(function (k) { if (!cols[k]) l.cols[k] = l.cols[k].concat(new Array(n).fill(null)); });
  l.end = s.start + n * s.stepMs;
  var total = (l.end - l.start) / l.stepMs;
  if (total > MAX_POINTS) {
    var cut = total - MAX_POINTS;
    Object.keys(l.cols).forEach(function (k) { l.cols[k] = l.cols[k].slice(cut); });
    l.start += cut * l.stepMs;
  }
}
/** @param {Series} s */
function flatten(s) {
  /** @type {Columns} */
  var c = { req: s.requestsPerSecond, tok: s.outputTokensPerSecond, inflight: s.inFlight, kv: s.kvCacheUsage,
    ttft50: s.ttft.p50, ttft95: s.ttft.p95, ttft99: s.ttft.p99, tpot50: s.tpot.p50, tpot95: s.tpot.p95, tpot99: s.tpot.p99 };
  Object.keys(s.gpuUtilization).forEach(function (g) { c['gpu:' + g] = s.gpuUtilization[g]; });
  return c;
}
/** @param {Local} l @returns {number[]} */
function xs(l) {
  var n = (l.end - l.start) / l.stepMs, out = new Array(n);
  for (var i = 0; i < n; i++) out[i] = (l.start + i * l.stepMs) / 1000;
  return out;
}
/** @param {(number | null)[]} a @param {number} f */
function scale(a, f) { return a.map(function (v) { return v == null ? null : v * f; }); }
/** @param {number} n @param {number | null} v */
function constant(n, v) { return new Array(n).fill(v == null ? null : v); }

var sync = uPlot ? uPlot.sync('infermeter') : null;
/** @param {Plot} u @param {number} min @param {number} max @returns {[number, number]} */
function fromZero(u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; }
/** @param {string} id @param {PlotSeries[]} series @param {import('uplot').AlignedData} data @param {import('uplot').Axis[]} axes @param {import('uplot').Scales} [scales] */
function draw(id, series, data, axes, scales) {
  if (!uPlot) return;
  var box = $(id);
  var width = Math.max(300, box.clientWidth || 560);
  var key = series.map(function (s) { return s.label; }).join('|');
  var c = charts[id];
  if (c && c.key === key && c.width === width) { c.plot.setData(data); return; }
  if (c) c.plot.destroy();
  box.textContent = '';
  var opts = { width: width, height: 230, series: [{}].concat(series), axes: axes, scales: scales || { y: { range: fromZero } }, cursor: { sync: { key: 'infermeter' } }, legend: { live: true } };
  var plot = new uPlot(opts, data, box);
  if (sync) sync.sub(plot);
  charts[id] = { key: key, width: width, plot: plot };
}
/** @param {string} label @param {string} color @param {Partial<PlotSeries>} [extra] */
function line(label, color, extra) {
  /** @type {PlotSeries} */
  var s = { label: label, stroke: color, width: 2, spanGaps: false, points: { show: false } };
  if (extra) Object.assign(s, extra);
  return s;
}
/** @type {import('uplot').Axis[]} */
var msAxis = [{}, { label: 'ms', size: 60 }];

function renderCharts() {
  if (!uPlot || !local) return;
  var x = xs(local), n = x.length, c = local.cols, t = local.thresholds || {};
  draw('chart-ttft', [line('p50', COLORS.p50), line('p95', COLORS.p95), line('p99', COLORS.p99), line('SLO', COLORS.slo, { dash: [6, 4], width: 1.5 })],
    [x, scale(c.ttft50, 1000), scale(c.ttft95, 1000), scale(c.ttft99, 1000), constant(n, t.ttft == null ? null : t.ttft * 1000)], msAxis);
  draw('chart-tpot', [line('p50', COLORS.p50), line('p95', COLORS.p95), line('p99', COLORS.p99), line('SLO', COLORS.slo, { dash: [6, 4], width: 1.5 })],
    [x, scale(c.tpot50, 1000), scale(c.tpot95, 1000), scale(c.tpot99, 1000), constant(n, t.tpot == null ? null : t.tpot * 1000)], msAxis);
  draw('chart-throughput', [line('req/s', COLORS.req, { scale: 'req' }), line('output tok/s', COLORS.tok, { scale: 'tok' }), line('in flight', COLORS.inflight, { scale: 'req', width: 1 })],
    [x, c.req, c.tok, c.inflight], [{}, { scale: 'req', label: 'req/s · in flight', size: 60 }, { scale: 'tok', side: 1, label: 'tok/s', size: 60, grid: { show: false } }], { req: { range: fromZero }, tok: { range: fromZero } });
  var gpuKeys = Object.keys(c).filter(function (k) { return k.indexOf('gpu:') === 0; }).sort(function (a, b) { return Number(a.slice(4)) - Number(b.slice(4)); });
  var gs = [line('KV cache', COLORS.kv, { width: 3 })].concat(gpuKeys.map(function (k, i) { return line('GPU ' + k.slice(4), GPU_COLORS[i % GPU_COLORS.length], { width: 1.5 }); }));
  draw('chart-gpu', gs, [x, scale(c.kv, 100), ...gpuKeys.map(function (k) { return scale(c[k], 100); })], [{}, { label: '%', size: 50 }], { y: { range: [0, 100] } });
}

/**
 * Joules per output token and cost per million output tokens (all tokens, then good ones) over the energy window.
 * @param {HTMLTableRowElement} tr @param {ModelStatus['energy']} e @param {string | null} currency
 */
function energyCell(tr, e, currency) {
  if (!e) { cell(tr, DASH, 'energy', null); return; }
  var cost = currency && e.costPerMillionOutputTokens != null ? ' · ' + fmtNum(e.costPerMillionOutputTokens, currency + '/1M', 2) : '';
  var td = cell(tr, fmtNum(e.joulesPerOutputToken, 'J/tok', 2) + cost, 'energy', e.joulesPerOutputToken);
  td.title = 'over the energy window: ' + fmtNum(e.joules, 'J', 0) + ' for ' + e.outputTokens + ' output tokens (' + e.goodOutputTokens + ' good)\n' +
    'per good token: ' + fmtNum(e.joulesPerGoodOutputToken, 'J', 2) + (currency ? ', ' + fmtNum(e.costPerMillionGoodOutputTokens, currency + ' per million', 2) : '') +
    (currency ? '\ncost: ' + fmtNum(e.cost, currency, 4) : '\nno price set (--gpu-hour-cost, --energy-price)');
}

/**
 * The effective goodput over the last minute (good output tokens over all of them) and the tokens wasted since start; by cause in the tooltip (docs/waste.md).
 * @param {HTMLTableRowElement} tr @param {ModelStatus['waste']} w
 */
function wasteCell(tr, w) {
  if (!w) { cell(tr, DASH, 'waste', null); return; }
  var t = w.tokens, wasted = 0;
  Object.keys(t).forEach(function (k) { var x = t[/** @type {keyof typeof t} */ (k)]; wasted += x.input + x.output; });
  var td = cell(tr, fmtPct(w.effectiveGoodput, 0) + ' · ' + fmtNum(wasted, 'tok', 0), 'waste', w.effectiveGoodput, w.effectiveGoodput != null && w.effectiveGoodput < 0.9 ? 'warn' : '');
  td.title = 'effective goodput (60 s): ' + fmtNum(w.goodTokensPerSecond, 'tok/s') + ' good of ' + fmtNum(w.outputTokensPerSecond, 'tok/s') + ' sent\nwasted since start (input / output tokens):\n' +
    Object.keys(t).map(function (k) { var x = t[/** @type {keyof typeof t} */ (k)]; return k.replace('_', ' ') + ': ' + x.input + ' / ' + x.output; }).join('\n');
}

/**
 * Prefix reuse over the prefix-cache window: the traffic's (unbounded), at the engine's size, the engine's own; the verdict, its advice in the tooltip.
 * @param {HTMLTableRowElement} tr @param {ModelStatus['prefixCache']} p
 */
function prefixCell(tr, p) {
  if (!p) { cell(tr, DASH, 'prefix', null); return; }
  /** @param {(u: NonNullable<ModelStatus['prefixCache']>['upstreams'][number]) => number | null} f */
  var mean = function (f) {
    var w = 0, s = 0;
    p.upstreams.forEach(function (u) { var v = f(u); if (v != null && u.promptTokens > 0) { w += u.promptTokens; s += v * u.promptTokens; } });
    return w > 0 ? s / w : null;
  };
  var v = p.verdict;
  var text = [mean(function (u) { return u.unbounded; }), mean(function (u) { return u.engineSize; }), mean(function (u) { return u.engine; })].map(function (x) { return fmtPct(x, 0); }).join(' / ');
  var td = cell(tr, text + (v ? ' · ' + v.kind.replace(/_/g, ' ') : ''), 'prefix', v ? v.kind : null, v && v.kind !== 'delivering' && v.kind !== 'no_reuse' ? 'warn' : '');
  td.title = 'share of prompt tokens reused over ' + p.windowSeconds + ' s: the traffic holds / a cache of the engine\'s size / the engine\n' +
    p.upstreams.map(function (u) { return u.upstream + ': ' + u.requests + ' requests, ' + fmtPct(u.unbounded, 1) + ' / ' + fmtPct(u.engineSize, 1) + ' / ' + fmtPct(u.engine, 1) + (u.engineFrom ? ' (' + u.engineFrom.replace('_', ' ') + ')' : '') + (u.cacheTokens != null ? ', cache ' + u.cacheTokens + ' tokens' : ', cache size unknown'); }).join('\n') +
    (v ? '\n' + v.summary + '\n' + v.advice[0].engine + ': ' + v.advice[0].text : '\nno verdict before 20 requests') +
    (p.keptShare < 1 ? '\nmodelled ' + fmtPct(p.keptShare, 0) + ' of requests (sampled or shed)' : '');
}

/** Joules per output token per model, one point per energy slot (docs/energy.md). */
function renderEnergyChart() {
  var fig = $('energy-figure');
  fig.hidden = !energy;
  if (!uPlot || !energy) return;
  var e = energy, models = Object.keys(e.series.joulesPerOutputToken).sort();
  /** @type {number[]} */
  var x = []; for (var i = 0; i < e.series.points; i++) x.push((e.series.start + i * e.series.stepMs) / 1000);
  /** @type {(number | null)[][]} */
  var ys = models.map(function (m) { return e.series.joulesPerOutputToken[m] || []; });
  draw('chart-energy', models.map(function (m, k) { return line(m, GPU_COLORS[k % GPU_COLORS.length]); }), [x, ...ys], [{}, { label: 'J / output token', size: 60 }]);
}

/** @param {string} model */
function select(model) {
  selected = model;
  local = null;
  var u = new URL(location.href);
  if (model === '*') u.searchParams.delete('model'); else u.searchParams.set('model', model);
  history.replaceState(null, '', u);
  poll();
}

var inFlightPoll = false;
function poll() {
  if (inFlightPoll) return;
  inFlightPoll = true;
  var q = new URLSearchParams({ model: selected });
  var incremental = !!(local && local.model === selected);
  if (local && incremental) q.set('since', String(local.end - local.stepMs));
  fetch('/api/v1/status?' + q.toString(), { cache: 'no-store' }).then(function (r) {
    if (!r.ok) throw new Error('HTTP ' + r.status);
    return r.json();
  }).then(function (doc) {
    renderSummary(doc); renderModels(doc); renderApis(doc); renderGpus(doc); renderEngines(doc); renderCollectors(doc); renderSlow(doc);
    merge(doc.series, incremental); renderCharts();
    energy = doc.energy || null; renderEnergyChart();
    $('updated').textContent = 'updated ' + new Date(doc.generatedAt).toLocaleTimeString() + ' · up since ' + new Date(doc.startedAt).toLocaleString() + ' · refresh ' + REFRESH_MS / 1000 + ' s';
    $('updated').className = 'muted';
    document.body.setAttribute('data-ready', '1');
  }).catch(function (err) {
    $('updated').textContent = 'cannot reach infermeter: ' + err.message;
    $('updated').className = 'bad';
  }).then(function () { inFlightPoll = false; });
}

var filter = $as('filter', HTMLInputElement), chartModel = $as('chart-model', HTMLSelectElement);
filter.addEventListener('input', function () { filterText = filter.value.trim().toLowerCase(); poll(); });
chartModel.addEventListener('change', function () { select(chartModel.value); });
window.addEventListener('resize', function () { renderCharts(); renderEnergyChart(); });
poll();
setInterval(poll, REFRESH_MS);
