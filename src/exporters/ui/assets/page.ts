/**
 * The status page's HTML and CSS. Everything it loads comes from this listener (the
 * Content-Security-Policy in handler.ts forbids anything else): no CDN, no web font.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>infermeter status</title>
<link rel="stylesheet" href="/ui/uplot.css">
<link rel="stylesheet" href="/ui/app.css">
<script src="/ui/uplot.js" defer></script>
<script type="module" src="/ui/app.js"></script>
</head>
<body>
<header>
  <h1>infermeter <span class="sub">live status</span></h1>
  <div id="updated" class="muted">connecting…</div>
</header>
<section id="summary" class="cards"></section>
<section>
  <div class="bar">
    <h2>Models</h2>
    <input id="filter" type="search" placeholder="filter models" aria-label="filter models">
    <span class="muted" id="model-count"></span>
  </div>
  <div class="scroll" id="models-wrap">
    <table id="models">
      <thead><tr>
        <th>model</th><th title="what limits the model now, and the numbers it was decided from; hover for the advice">bottleneck</th><th title="load ratio: today's req/s over the req/s where the first P99 SLO would break (the capacity), the SLO and the limit that bind; hover for the fitted figures">headroom</th><th>req/s</th><th>out tok/s</th><th title="generation requests in flight now">in flight</th><th title="time-average requests in flight over the rate window">concurrency</th>
        <th>TTFT p50</th><th>p95</th><th>p99</th><th>TPOT p50</th><th>p95</th><th>p99</th><th>E2E p50</th><th>p95</th><th>p99</th>
        <th>outcomes 5m</th><th title="the model's worst SLO over 5 minutes; hover a cell for every SLO">worst SLO 5m</th><th title="error budget burn rate: 1× spends it exactly over the SLO window">burn 5m / 1h</th><th title="GPU joules per output token and cost per million output tokens over 5 minutes; hover for the figures per good token (docs/energy.md)">energy · cost</th><th title="prefix reuse over the prefix-cache window: what the traffic holds / a cache of the engine's size / the engine, and the verdict; hover for the knob (--prefix-cache, docs/prefix-cache.md)">prefix reuse</th><th title="effective goodput over the last minute: output tokens of requests that completed within their SLOs over all output tokens sent (aborted ones too); then the tokens wasted since start; hover for each cause (docs/waste.md)">goodput · waste</th>
      </tr></thead>
      <tbody></tbody>
    </table>
  </div>
  <p class="muted small" id="models-note"></p>
  <p class="muted small" id="routes-note" title="requests per route label over the last 5 minutes: which generation APIs the traffic uses"></p>
</section>
<section id="apis-section" hidden>
  <h2 title="every model together, per generation API: the api label of the latency histograms on /metrics">By API</h2>
  <div class="scroll short"><table id="apis"><thead><tr>
    <th>API</th><th>req/s</th><th>out tok/s</th><th>TTFT p50</th><th>p95</th><th>p99</th><th>TPOT p50</th><th>p95</th><th>p99</th><th>E2E p50</th><th>p95</th><th>p99</th><th>outcomes 5m</th>
  </tr></thead><tbody></tbody></table></div>
</section>
<section>
  <div class="bar">
    <h2>Last 15 minutes</h2>
    <label>charts for <select id="chart-model"><option value="*">all models</option></select></label>
  </div>
  <div class="charts">
    <figure><figcaption>TTFT percentiles</figcaption><div id="chart-ttft" class="chart"></div></figure>
    <figure><figcaption>TPOT percentiles</figcaption><div id="chart-tpot" class="chart"></div></figure>
    <figure><figcaption>Throughput</figcaption><div id="chart-throughput" class="chart"></div></figure>
    <figure><figcaption>GPU utilisation and KV-cache usage</figcaption><div id="chart-gpu" class="chart"></div></figure>
    <figure id="energy-figure" hidden><figcaption>Energy per output token, per model (10 s slots)</figcaption><div id="chart-energy" class="chart"></div></figure>
  </div>
</section>
<section class="two">
  <div>
    <h2>GPUs</h2>
    <div class="scroll short"><table id="gpus"><thead><tr>
      <th>GPU</th><th>name</th><th>util</th><th>memory</th><th>power</th><th>temp</th><th title="GPM: SM active / SM occupancy / tensor active / DRAM bandwidth">SM act / occ / tensor / DRAM</th>
    </tr></thead><tbody></tbody></table></div>
    <p class="muted small" id="gpus-note"></p>
  </div>
  <div>
    <h2>Engines</h2>
    <div id="engines" class="engines"></div>
    <h2>Collectors</h2>
    <table id="collectors"><thead><tr><th>collector</th><th title="the upstream this instance reads: the engine collector runs one per upstream">upstream</th><th>state</th><th>last success</th><th>took</th></tr></thead><tbody></tbody></table>
  </div>
</section>
<section id="slow-section" hidden>
  <h2>Slow requests</h2>
  <div class="scroll short"><table id="slow"><thead><tr>
    <th>started</th><th>model</th><th>outcome</th><th>TTFT</th><th>TPOT</th><th>E2E</th><th>tokens in / out</th><th>in flight</th><th>trace</th>
  </tr></thead><tbody></tbody></table></div>
</section>
<footer class="muted small">Read-only. Data: <a href="/api/v1/status">/api/v1/status</a> · <a href="/metrics">/metrics</a>. Percentiles from raw samples of the last minute; rates over 10 s; times in your browser's time zone.</footer>
</body>
</html>
`;

export const PAGE_CSS = `
:root { --fg:#1d2330; --muted:#6b7280; --line:#e5e7eb; --bg:#f7f8fa; --card:#fff; --bad:#c62828; --warn:#b26a00; --good:#2e7d32; }
* { box-sizing: border-box; }
body { margin: 0; padding: 12px 20px 24px; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; justify-content: space-between; }
h1 { font-size: 20px; margin: 4px 0 8px; } h1 .sub { font-weight: 400; color: var(--muted); }
h2 { font-size: 15px; margin: 14px 0 6px; }
.muted { color: var(--muted); } .small { font-size: 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 8px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.card .v { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; } .card .k { color: var(--muted); font-size: 12px; }
.bar { display: flex; gap: 12px; align-items: center; } .bar h2 { margin-right: 4px; }
input[type=search], select { font: inherit; padding: 2px 6px; }
.scroll { max-height: 360px; overflow: auto; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
.scroll.short { max-height: 300px; }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { padding: 3px 6px; font-size: 12px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
th { position: sticky; top: 0; background: #f1f3f6; font-weight: 600; z-index: 1; }
th:first-child, td:first-child { text-align: left; }
td.verdict { text-align: left; max-width: 420px; overflow: hidden; text-overflow: ellipsis; } td.verdict .kind { font-weight: 600; } td.verdict .evidence { color: var(--muted); }
td.name { max-width: 320px; overflow: hidden; text-overflow: ellipsis; text-align: left; }
tbody tr { cursor: default; } #models tbody tr { cursor: pointer; } #models tbody tr:hover { background: #f5f8ff; }
tr.selected { background: #e8f0fe !important; }
.bad { color: var(--bad); font-weight: 600; } .warn { color: var(--warn); } .good { color: var(--good); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 10px; }
figure { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px; }
figcaption { font-weight: 600; margin: 0 0 4px 4px; }
.chart { min-height: 250px; }
.two { display: grid; grid-template-columns: 3fr 2fr; gap: 16px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; font-variant-numeric: tabular-nums; }
.engines { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 8px; }
.engine h3 { font-size: 13px; margin: 0 0 4px; } .engine h3 .kind { font-weight: 400; color: var(--muted); }
footer { margin-top: 16px; }
@media (max-width: 900px) { .two { grid-template-columns: 1fr; } .charts { grid-template-columns: 1fr; } }
`;
