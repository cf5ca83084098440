import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderMarkdown } from '../../../src/bench/markdown.js';
import { renderHtml } from '../../../src/bench/html.js';
import { compareRows, renderCompare } from '../../../src/bench/compare.js';
import { fakeReport, reportValidator } from './fixture.js';

test('the JSON schema accepts a report and rejects a broken one', () => {
  const validate = reportValidator();
  const r = fakeReport();
  assert.ok(validate(JSON.parse(JSON.stringify(r))), JSON.stringify(validate.errors));
  const broken = JSON.parse(JSON.stringify(r));
  broken.steps[0].requests[0].outcome = 'fine';
  delete broken.singleStream.summary.ttft.p99;
  assert.equal(validate(broken), false);
  assert.ok(validate.errors!.length >= 2);
});

test('Markdown: environment, single-stream percentiles, one row per load step with goodput, SLO attainment, GPU and KV', () => {
  const md = renderMarkdown(fakeReport());
  assert.match(md, /^# infermeter bench: m$/m);
  assert.match(md, /\| GPU \| 1× NVIDIA H100 80GB HBM3, driver 550\.127\.05, CUDA 12\.4 \|/);
  assert.match(md, /\| TTFT \(ms\) \| 50\.0 \| .* \|/);
  const rows = md.split('\n').filter((l) => /^\| (1|4|8) req\/s \|/.test(l));
  assert.equal(rows.length, 3);
  const header = md.split('\n').find((l) => l.startsWith('| load |'))!;
  const cells = (l: string) => l.split('|').slice(1, -1).map((c) => c.trim());
  assert.equal(cells(rows[0]!).length, cells(header).length);
  assert.match(header, /TTFT ≤ 100 ms/);
  assert.match(rows[0]!, /upstream_error 1/);
  assert.doesNotMatch(md, /PARTIAL/);
  assert.match(renderMarkdown({ ...fakeReport(), partial: true, partialReason: 'interrupted' }), /PARTIAL REPORT/);
});

test('HTML is self-contained: inline SVG charts, nothing fetched', () => {
  const html = renderHtml(fakeReport());
  assert.ok((html.match(/<svg /g) ?? []).length >= 8);
  assert.match(html, /<polyline /);
  assert.doesNotMatch(html, /<script|<link|src=|url\(|https?:\/\/(?!www\.w3\.org\/2000\/svg|127\.0\.0\.1)/);
  assert.match(renderHtml(fakeReport({ charts: false })), /infermeter bench/);
});

test('compare: before/after with absolute and relative deltas; steps matched by load', () => {
  const a = fakeReport();
  const b = fakeReport({ scale: 2 });
  const rows = compareRows(a, b);
  const ttft = rows.find((r) => r.metric === '8 req/s TTFT P50')!;
  assert.ok(Math.abs(ttft.b! / ttft.a! - 2) < 1e-9);
  const text = renderCompare(a, b, ['before', 'after']);
  assert.match(text, /\| metric \| A: before \| B: after \| Δ \(B − A\) \| Δ % \|/);
  assert.match(text, /\| 8 req\/s TTFT P50 \| [\d.]+ ms \| [\d.]+ ms \| \+[\d.]+ ms \| \+100\.0% \|/);
  assert.match(text, /\| single-stream TTFT P50 \| .* \| \+0\.00 ms \| \+0\.0% \|/);
  const fewer = { ...b, steps: b.steps.slice(0, 1) };
  assert.match(renderCompare(a, fewer, ['a', 'b']), /\| 8 req\/s TTFT P50 \| [\d.]+ ms \| – \| – \| – \|/);
});
