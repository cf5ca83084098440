/**
 * Our GGUF writer against files written by llama.cpp's own tools: every vocab-only GGUF that
 * ships with the llama.cpp source (extracted by `npm run engine:llama`) is read by our reader
 * and re-encoded by our writer; the bytes must be identical (a GGUF v2 file differs only in
 * its version field: we write v3). That the server runs our generated model is covered by
 * every other llama-* test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { encodeGguf, GGUF_VERSION } from '../../src/lib/gguf.js';
import { readGguf } from '../../src/lib/gguf-read.js';
import { withLlama } from './llama-harness.js';

withLlama('re-encoding llama.cpp\'s vocab GGUF files gives their exact bytes', (engine) => {
  const vocabDir = join(dirname(dirname(engine.model)), 'vocab');
  test('every ggml-vocab-*.gguf round-trips byte for byte', () => {
    const files = readdirSync(vocabDir).filter((f) => /^ggml-vocab-.*\.gguf$/.test(f));
    assert.ok(files.length >= 10, `vocab files in ${vocabDir}: ${files.length}`);
    for (const f of files) {
      const original = readFileSync(join(vocabDir, f));
      const parsed = readGguf(original);
      const ours = Buffer.concat(encodeGguf({ kvs: parsed.kvs, tensors: [] }));
      const expected = Buffer.from(original);
      if (parsed.version !== GGUF_VERSION) expected.writeUInt32LE(GGUF_VERSION, 4);
      assert.ok(ours.equals(expected), `${f} (GGUF v${parsed.version}, ${parsed.kvs.length} KV pairs)`);
    }
  });
});
