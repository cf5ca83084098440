/** The trace's files (exporters/workload-trace/file.ts): rotation by size and count, sidecars that follow their files, a restart's rotation. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TraceFiles, sidecarOf, type TraceFacts } from '../../../src/exporters/workload-trace/file.js';

const FACTS: TraceFacts = {
  format: 'infermeter-workload-trace', format_version: 1, infermeter_version: 'test', start_unix_ms: 1_700_000_000_000, start_time: new Date(1_700_000_000_000).toISOString(),
  block_size: 512, chars_per_token: 4, hash: 'sha256-53-salted', cut: {}, sample: 1, engines: {},
};

/** A line of exactly `bytes` bytes with its newline. */
const line = (timestamp: number, bytes = 100) => {
  const head = `{"timestamp":${timestamp},"pad":"`;
  return { text: head + 'x'.repeat(bytes - head.length - 3) + '"}', timestamp };
};
const meta = (file: string) => JSON.parse(readFileSync(sidecarOf(file), 'utf8')) as Record<string, any>;
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { timestamp: number }).timestamp);

test('rotates before a line would pass the size limit; keeps at most max-files files, the newest as FILE.1; sidecars move with their files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-files-'));
  const file = join(dir, 't.jsonl');
  const files = new TraceFiles(file, 350, 3, () => FACTS);
  files.open();
  // 100-byte lines, 3 to a file (a 4th would make 400 > 350): 10 lines are files of 3, 3, 3, 1.
  for (let t = 0; t < 10; t++) {
    files.seen(null);
    files.append([line(t)]);
  }
  files.close();
  assert.deepEqual(readdirSync(dir).sort(), ['t.jsonl', 't.jsonl.1', 't.jsonl.1.meta.json', 't.jsonl.2', 't.jsonl.2.meta.json', 't.jsonl.meta.json']);
  assert.deepEqual(lines(file), [9]);
  assert.deepEqual(lines(`${file}.1`), [6, 7, 8]);
  assert.deepEqual(lines(`${file}.2`), [3, 4, 5], 'the oldest (0, 1, 2) went');
  for (const [f, first, last] of [[file, 9, 9], [`${file}.1`, 6, 8], [`${file}.2`, 3, 5]] as const) {
    const m = meta(f);
    assert.equal(m['closed'], true);
    assert.equal(m['start_unix_ms'], FACTS.start_unix_ms, 'every file shares the run\'s origin');
    assert.equal(m['first_timestamp'], first);
    assert.equal(m['last_timestamp'], last);
    assert.equal(m['lines'], last - first + 1);
  }
  rmSync(dir, { recursive: true, force: true });
});

test('one batch that spans a rotation is split at the limit, in order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-files-'));
  const file = join(dir, 't.jsonl');
  const files = new TraceFiles(file, 250, 5, () => FACTS);
  files.open();
  files.append([line(1), line(2), line(3), line(4), line(5)]);
  files.close();
  assert.deepEqual(lines(`${file}.2`), [1, 2]);
  assert.deepEqual(lines(`${file}.1`), [3, 4]);
  assert.deepEqual(lines(file), [5]);
  rmSync(dir, { recursive: true, force: true });
});

test('the sidecar counts what was seen and skipped, and the kept ratio; a line longer than the limit still gets a file of its own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-files-'));
  const file = join(dir, 't.jsonl');
  const files = new TraceFiles(file, 150, 4, () => FACTS);
  files.open();
  const m0 = meta(file);
  assert.equal(m0['closed'], false);
  assert.equal(m0['kept_ratio'], 1, 'nothing seen yet');
  assert.equal(m0['first_timestamp'], null);
  files.seen(null);
  files.seen('sampled');
  files.seen('busy');
  files.seen(null);
  files.append([line(7, 400), line(8)]);
  files.refresh();
  const m = meta(file);
  assert.deepEqual(m['skipped'], { sampled: 0, busy: 0, unreadable: 0 }, 'counts belong to the file being written: these were seen before the rotation');
  assert.deepEqual(lines(`${file}.1`), [7]);
  assert.deepEqual(lines(file), [8]);
  const m1 = meta(`${file}.1`);
  assert.equal(m1['requests'], 4);
  assert.deepEqual(m1['skipped'], { sampled: 1, busy: 1, unreadable: 0 });
  assert.equal(m1['lines'], 1);
  assert.equal(m1['kept_ratio'], 0.25);
  files.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a restart rotates a non-empty trace away before writing; an empty one is reused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-files-'));
  const file = join(dir, 't.jsonl');
  writeFileSync(file, '{"timestamp":1}\n');
  writeFileSync(sidecarOf(file), '{"old":true}\n');
  const files = new TraceFiles(file, 1 << 20, 3, () => FACTS);
  files.open();
  files.append([line(2)]);
  files.close();
  assert.deepEqual(lines(`${file}.1`), [1]);
  assert.deepEqual(meta(`${file}.1`), { old: true });
  assert.deepEqual(lines(file), [2]);
  const again = new TraceFiles(join(dir, 'empty.jsonl'), 1 << 20, 3, () => FACTS);
  writeFileSync(join(dir, 'empty.jsonl'), '');
  again.open();
  again.close();
  assert.ok(!existsSync(join(dir, 'empty.jsonl.1')));
  rmSync(dir, { recursive: true, force: true });
});
