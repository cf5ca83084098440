import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GgmlType, GgufError, GgufType, encodeGguf, type GgufFile, type GgufKv } from '../../../src/lib/gguf.js';
import { readGguf } from '../../../src/lib/gguf-read.js';

const bytes = (file: GgufFile) => Buffer.concat(encodeGguf(file));

test('header: magic "GGUF", version 3, u64 tensor and KV counts', () => {
  const b = bytes({ kvs: [{ key: 'general.architecture', type: GgufType.STRING, value: 'llama' }], tensors: [] });
  assert.equal(b.toString('latin1', 0, 4), 'GGUF');
  assert.equal(b.readUInt32LE(4), 3);
  assert.equal(b.readBigUInt64LE(8), 0n);
  assert.equal(b.readBigUInt64LE(16), 1n);
  // KV: u64 key length, key bytes, u32 type, u64 string length, string bytes; no padding without tensors.
  assert.equal(b.readBigUInt64LE(24), 20n);
  assert.equal(b.toString('utf8', 32, 52), 'general.architecture');
  assert.equal(b.readUInt32LE(52), GgufType.STRING);
  assert.equal(b.readBigUInt64LE(56), 5n);
  assert.equal(b.toString('utf8', 64, 69), 'llama');
  assert.equal(b.length, 69);
});

test('every KV type round-trips through our reader, nested arrays included', () => {
  const kvs: GgufKv[] = [
    { key: 'a.u8', type: GgufType.UINT8, value: 255 },
    { key: 'a.i8', type: GgufType.INT8, value: -128 },
    { key: 'a.u16', type: GgufType.UINT16, value: 65535 },
    { key: 'a.i16', type: GgufType.INT16, value: -32768 },
    { key: 'a.u32', type: GgufType.UINT32, value: 4294967295 },
    { key: 'a.i32', type: GgufType.INT32, value: -2147483648 },
    { key: 'a.f32', type: GgufType.FLOAT32, value: 0.5 },
    { key: 'a.bool', type: GgufType.BOOL, value: true },
    { key: 'a.str', type: GgufType.STRING, value: 'héllo ▁world' },
    { key: 'a.u64', type: GgufType.UINT64, value: 18446744073709551615n },
    { key: 'a.i64', type: GgufType.INT64, value: -9223372036854775808n },
    { key: 'a.f64', type: GgufType.FLOAT64, value: Math.PI },
    { key: 'a.strs', type: GgufType.ARRAY, value: { itemType: GgufType.STRING, items: ['<s>', '', '▁the'] } },
    { key: 'a.f32s', type: GgufType.ARRAY, value: { itemType: GgufType.FLOAT32, items: [0, -1.5, 2] } },
    { key: 'a.nested', type: GgufType.ARRAY, value: { itemType: GgufType.ARRAY, items: [{ itemType: GgufType.INT32, items: [1, 2] }, { itemType: GgufType.INT32, items: [] }] } },
  ];
  const parsed = readGguf(bytes({ kvs, tensors: [] }));
  assert.equal(parsed.version, 3);
  assert.deepEqual(parsed.kvs, kvs);
});

test('array layout: u32 item type, u64 count, then the items', () => {
  const b = bytes({ kvs: [{ key: 'k', type: GgufType.ARRAY, value: { itemType: GgufType.INT32, items: [7, -1] } }], tensors: [] });
  let at = 24 + 8 + 1;
  assert.equal(b.readUInt32LE(at), GgufType.ARRAY); at += 4;
  assert.equal(b.readUInt32LE(at), GgufType.INT32); at += 4;
  assert.equal(b.readBigUInt64LE(at), 2n); at += 8;
  assert.equal(b.readInt32LE(at), 7);
  assert.equal(b.readInt32LE(at + 4), -1);
});

function f16Tensor(name: string, dims: number[]) {
  const n = dims.reduce((a, c) => a * c, 1);
  const data = new Uint8Array(n * 2).map((_, i) => (i * 7 + name.length) & 0xff);
  return { name, dims, type: GgmlType.F16, data };
}

for (const alignment of [32, 64]) {
  test(`alignment ${alignment}: data section and every tensor offset aligned, offsets packed as ggml requires`, () => {
    const kvs: GgufKv[] = alignment === 32 ? [] : [{ key: 'general.alignment', type: GgufType.UINT32, value: alignment }];
    const tensors = [f16Tensor('odd', [3]), f16Tensor('m', [5, 7]), f16Tensor('v', [alignment / 2])];
    const file = bytes({ kvs, tensors });
    const parsed = readGguf(file);
    assert.equal(parsed.alignment, alignment);
    assert.equal(parsed.dataOffset % alignment, 0);
    let expected = 0;
    for (const [i, t] of parsed.tensors.entries()) {
      assert.equal(t.offset % alignment, 0, `${t.name} offset`);
      assert.equal(t.offset, expected, `${t.name} offset is the padded sum of the tensors before it`);
      assert.deepEqual(t.dims, tensors[i]!.dims);
      assert.equal(t.type, GgmlType.F16);
      assert.deepEqual(new Uint8Array(t.data), tensors[i]!.data);
      expected += Math.ceil(t.data.length / alignment) * alignment;
    }
    assert.equal(file.length, parsed.dataOffset + expected, 'the last tensor is padded too');
    // Padding is zeros.
    const afterOdd = parsed.dataOffset + 6;
    assert.ok(file.subarray(afterOdd, parsed.dataOffset + alignment).every((x) => x === 0));
  });
}

test('tensor info layout: name, u32 n_dims, u64 dims, u32 type, u64 offset', () => {
  const b = bytes({ kvs: [], tensors: [{ name: 'w', dims: [2, 3], type: GgmlType.F32, data: new Uint8Array(24) }] });
  assert.equal(b.readBigUInt64LE(8), 1n, 'one tensor');
  let at = 24;
  assert.equal(b.readBigUInt64LE(at), 1n, 'name length'); at += 8;
  assert.equal(b.toString('utf8', at, at + 1), 'w'); at += 1;
  assert.equal(b.readUInt32LE(at), 2); at += 4;
  assert.equal(b.readBigUInt64LE(at), 2n); at += 8;
  assert.equal(b.readBigUInt64LE(at), 3n); at += 8;
  assert.equal(b.readUInt32LE(at), GgmlType.F32); at += 4;
  assert.equal(b.readBigUInt64LE(at), 0n); at += 8;
  assert.equal(at, 65);
  assert.equal(b.length, 96 + 32, 'infos padded to 96, then 24 data bytes padded to 32');
});

test('invalid input is refused with the key or tensor named', () => {
  const enc = (file: GgufFile) => () => encodeGguf(file);
  assert.throws(enc({ kvs: [{ key: 'x', type: GgufType.UINT32, value: 'no' }], tensors: [] }), (e: Error) => e instanceof GgufError && /x: value no/.test(e.message));
  assert.throws(enc({ kvs: [{ key: 'x', type: GgufType.BOOL, value: 1 }], tensors: [] }), GgufError);
  assert.throws(enc({ kvs: [{ key: 'x', type: GgufType.INT8, value: 1 }, { key: 'x', type: GgufType.INT8, value: 2 }], tensors: [] }), /duplicate key x/);
  assert.throws(enc({ kvs: [{ key: 'general.alignment', type: GgufType.UINT32, value: 48 }], tensors: [] }), /power of two/);
  assert.throws(enc({ kvs: [], tensors: [{ name: 't', dims: [4], type: GgmlType.F32, data: new Uint8Array(8) }] }), /tensor t: shape needs 16 bytes, data has 8/);
  assert.throws(enc({ kvs: [], tensors: [{ name: 't', dims: [1, 1, 1, 1, 1], type: GgmlType.F32, data: new Uint8Array(4) }] }), /1 to 4 dimensions/);
});

test('the reader rejects what is not GGUF, or is cut short', () => {
  assert.throws(() => readGguf(Buffer.from('GGML\x03\0\0\0')), /not a GGUF file/);
  const good = bytes({ kvs: [{ key: 'k', type: GgufType.STRING, value: 'value' }], tensors: [] });
  assert.throws(() => readGguf(good.subarray(0, good.length - 1)), /truncated/);
  const v9 = Buffer.from(good);
  v9.writeUInt32LE(9, 4);
  assert.throws(() => readGguf(v9), /unsupported GGUF version 9/);
});
