/**
 * The HTML report renders in a real browser (headless Chromium, no network) and its charts
 * are drawn: a screenshot has many pixels of the chart colours where the charts are, and
 * the same page without load steps has next to none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../../src/lib/spawn.js';
import { renderHtml } from '../../src/bench/html.js';
import { COLORS } from '../../src/bench/svg.js';
import { fakeReport } from '../unit/bench/fixture.js';
import { countColour, decodePng } from './bench-png.js';
import { skipWithout } from '../helpers/tools.js';

const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';

async function screenshot(dir: string, name: string, html: string): Promise<ReturnType<typeof decodePng>> {
  const page = join(dir, `${name}.html`);
  const png = join(dir, `${name}.png`);
  writeFileSync(page, html);
  const r = await runCommand(CHROMIUM, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--no-first-run', `--user-data-dir=${join(dir, `profile-${name}`)}`, `--screenshot=${png}`, '--window-size=1200,2000', `file://${page}`,
  ], 60_000);
  assert.ok(existsSync(png), `chromium wrote no screenshot (exit ${r.code}): ${r.stderrTail}`);
  return decodePng(readFileSync(png));
}

test('the HTML report renders in headless Chromium with its charts drawn', { timeout: 120_000, skip: skipWithout(existsSync(CHROMIUM), `no ${CHROMIUM}`) }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-html-'));
  try {
    const withCharts = await screenshot(dir, 'charts', renderHtml(fakeReport()));
    const without = await screenshot(dir, 'plain', renderHtml(fakeReport({ charts: false })));
    assert.equal(withCharts.width, 1200);
    const colours = [COLORS.p50, COLORS.p95, COLORS.p99, COLORS.good, COLORS.a];
    // The chart grid sits below the title and headline cards.
    const drawn = countColour(withCharts, colours, 150, 1500);
    const plain = countColour(without, colours, 150, 1500);
    console.log(`chart-coloured pixels: ${drawn} with charts, ${plain} without`);
    assert.ok(drawn > 3000, `${drawn} chart-coloured pixels`);
    assert.ok(drawn > 20 * (plain + 1), `${drawn} with charts vs ${plain} without`);
    // Every chart panel in the left column holds coloured lines, not only the first one.
    for (const [y0, y1] of [[200, 500], [520, 820], [840, 1140]]) assert.ok(countColour(withCharts, colours, y0!, y1!) > 300, `rows ${y0}-${y1}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
