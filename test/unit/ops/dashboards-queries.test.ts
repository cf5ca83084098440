import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSloConfig } from '../../../src/slo/config.js';
import { dashboardQueries } from '../../../src/ops/dashboards-kit.js';
import { dashboards } from '../../../src/ops/dashboards.js';
import { checkExpressions, substituteVariables } from './rules-helpers.js';
import { haveTool } from '../../helpers/tools.js';

const slos = parseSloConfig({ objective: 0.99, window: '30d', default: { ttft: 2, tpot: 0.1 } }, 'test');
const all = dashboards(slos);

test('overview, GPU and engine dashboards with unique uids and the four template variables', () => {
  assert.deepEqual(all.map((d) => d.json['uid']), ['infermeter-overview', 'infermeter-gpu', 'infermeter-engine']);
  for (const d of all) {
    const vars = (d.json['templating'] as { list: { name: string }[] }).list.map((v) => v.name);
    assert.deepEqual(vars, ['datasource', 'tracing', 'instance', 'model'], d.file);
  }
});

test('panels sit on the 24-column grid without overlapping', () => {
  for (const d of all) {
    const taken = new Set<string>();
    const ids = new Set<number>();
    for (const p of d.json['panels'] as { id: number; title: string; gridPos: { x: number; y: number; w: number; h: number } }[]) {
      assert.ok(!ids.has(p.id), `${d.file}: duplicate panel id ${p.id}`);
      ids.add(p.id);
      const g = p.gridPos;
      assert.ok(g.x >= 0 && g.x + g.w <= 24, `${d.file} "${p.title}" leaves the grid`);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          assert.ok(!taken.has(`${x},${y}`), `${d.file} "${p.title}" overlaps another panel`);
          taken.add(`${x},${y}`);
        }
      }
    }
  }
});

test('every panel query filters by instance and uses the datasource variable', () => {
  for (const d of all) {
    for (const p of d.json['panels'] as { type: string; title: string; datasource?: { uid: string }; targets?: { expr: string }[] }[]) {
      if (p.type === 'row') continue;
      assert.equal(p.datasource?.uid, '${datasource}', `${d.file} "${p.title}"`);
      for (const t of p.targets ?? []) assert.match(t.expr, /instance=~"\$instance"/, `${d.file} "${p.title}"`);
    }
  }
});

test('the overview has the "why is P99 slow" row: TTFT P99, its decomposition, KV cache, waiting requests, GPU utilisation on one axis', () => {
  const panels = all[0]!.json['panels'] as { type: string; title: string; gridPos: { w: number }; targets?: { expr: string; exemplar?: boolean }[]; links?: { url: string }[] }[];
  const row = panels.findIndex((p) => p.type === 'row' && /why is P99 slow/i.test(p.title));
  assert.ok(row >= 0);
  const exprs = panels.slice(row + 1, row + 9).map((p) => {
    assert.equal(p.gridPos.w, 24, 'full width, so the time axes line up');
    return p.targets!.map((t) => t.expr).join('\n');
  });
  assert.match(exprs[0]!, /histogram_quantile\(0\.99, .*time_to_first_token/);
  // The decomposition: proxy TTFT beside the engine's TTFT, queue and prefill, and the residual of the means.
  for (const m of ['gen_ai_server_time_to_first_token_seconds', 'infermeter_engine_time_to_first_token_seconds_bucket', 'infermeter_engine_queue_time_seconds_bucket', 'infermeter_engine_prefill_time_seconds_bucket']) assert.ok(exprs[1]!.includes(m), m);
  assert.match(exprs[2]!, /infermeter_engine_queue_time_seconds_sum[^]*infermeter_engine_prefill_time_seconds_sum[^]*histogram_sum\(sum by \(instance\) \(rate\(gen_ai_server_time_to_first_token_seconds[^]*\n-\n[^]*infermeter_engine_time_to_first_token_seconds_sum/);
  assert.match(exprs[3]!, /kv_cache_usage_ratio/);
  assert.match(exprs[4]!, /requests_waiting/);
  assert.match(exprs[5]!, /gpu_sm_utilization_ratio/);
  // Decode is memory-bound: DRAM bandwidth right under TPOT.
  assert.match(exprs[6]!, /histogram_quantile\(0\.99, .*time_per_output_token/);
  assert.match(exprs[7]!, /gpu_dram_bandwidth_utilization_ratio/);
  // Exemplars on the proxy's latency, linked to the tracing datasource.
  for (const i of [1, 2, 3]) assert.equal(panels[row + i]!.targets![0]!.exemplar, i < 3 ? true : undefined, panels[row + i]!.title);
  assert.ok(panels[row + 1]!.links!.some((l) => l.url.includes('${tracing}')));
});

test('the GPU dashboard shows SM occupancy, tensor activity and DRAM bandwidth in the row with sm%, each with its one-line meaning', () => {
  const panels = all[1]!.json['panels'] as { type: string; title: string; description: string; gridPos: { y: number }; targets?: { expr: string }[] }[];
  const find = (metric: string) => panels.find((p) => p.type !== 'row' && p.targets!.some((t) => t.expr.includes(metric)))!;
  const sm = find('infermeter_gpu_sm_utilization_ratio');
  for (const metric of ['infermeter_gpu_sm_occupancy_ratio', 'infermeter_gpu_tensor_active_ratio', 'infermeter_gpu_dram_bandwidth_utilization_ratio', 'infermeter_gpu_sm_active_ratio']) {
    const p = find(metric);
    assert.equal(p.gridPos.y, sm.gridPos.y, `${p.title} beside sm%`);
    assert.ok(p.description.length > 20 && !p.description.includes('\n'), `${p.title}: one line on what it means`);
  }
  assert.ok(find('infermeter_gpu_nvlink_receive_bytes_per_second'));
  assert.ok(find('infermeter_gpu_source_info'));
});

test('every panel query parses as PromQL once template variables are substituted', (t) => {
  if (!haveTool(t, 'promtool', ['--version'], 'prometheus')) return;
  const exprs = all.flatMap((d) => dashboardQueries(d.json).map((q) => substituteVariables(q.expr)));
  assert.ok(exprs.length > 30);
  const r = checkExpressions(exprs);
  assert.equal(r.status, 0, r.output);
});
