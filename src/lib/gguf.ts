/**
 * GGUF (version 3) writer: the file format llama.cpp loads models from, written from the
 * specification (ggml docs/gguf.md) and checked against what ggml's own reader enforces:
 *
 *   header      u32 magic "GGUF", u32 version 3, u64 tensor count, u64 KV count
 *   KV pairs    string key, u32 value type, value (arrays: u32 item type, u64 count, items)
 *   tensor info string name, u32 n_dims, u64 dims[n_dims] (ne order: innermost first),
 *               u32 ggml type, u64 offset from the start of the data section
 *   padding     zeros up to the alignment (general.alignment, default 32), if any tensors
 *   data        each tensor padded to the alignment; ggml requires every offset to equal
 *               the padded sum of the tensors before it, so the layout has no gaps.
 *
 * Strings are a u64 byte length and UTF-8 bytes, no terminator. Everything is little-endian.
 * Only what infermeter needs is supported: every KV type, and F32/F16 tensors.
 */

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

export enum GgufType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/** ggml tensor types this writer knows the size of (block size 1). */
export enum GgmlType { F32 = 0, F16 = 1 }
export const GGML_TYPE_SIZE: Record<GgmlType, number> = { [GgmlType.F32]: 4, [GgmlType.F16]: 2 };

export interface GgufArray { itemType: GgufType; items: GgufItem[] }
export type GgufItem = number | bigint | boolean | string | GgufArray;

export interface GgufKv { key: string; type: GgufType; value: GgufItem }

export interface GgufTensor {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  type: GgmlType;
  data: Uint8Array;
}

export interface GgufFile { kvs: GgufKv[]; tensors: GgufTensor[] }

export class GgufError extends Error {}

/** A growable little-endian byte sink. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void { this.room(1); this.buf.writeUInt8(v, this.length); this.length += 1; }
  i8(v: number): void { this.room(1); this.buf.writeInt8(v, this.length); this.length += 1; }
  u16(v: number): void { this.room(2); this.buf.writeUInt16LE(v, this.length); this.length += 2; }
  i16(v: number): void { this.room(2); this.buf.writeInt16LE(v, this.length); this.length += 2; }
  u32(v: number): void { this.room(4); this.buf.writeUInt32LE(v, this.length); this.length += 4; }
  i32(v: number): void { this.room(4); this.buf.writeInt32LE(v, this.length); this.length += 4; }
  f32(v: number): void { this.room(4); this.buf.writeFloatLE(v, this.length); this.length += 4; }
  f64(v: number): void { this.room(8); this.buf.writeDoubleLE(v, this.length); this.length += 8; }
  u64(v: bigint | number): void { this.room(8); this.buf.writeBigUInt64LE(BigInt(v), this.length); this.length += 8; }
  i64(v: bigint | number): void { this.room(8); this.buf.writeBigInt64LE(BigInt(v), this.length); this.length += 8; }
  str(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.u64(n);
    this.room(n);
    this.buf.write(s, this.length, 'utf8');
    this.length += n;
  }
  pad(alignment: number): void { while (this.length % alignment !== 0) this.u8(0); }
  bytes(): Buffer { return this.buf.subarray(0, this.length); }
}

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

export function tensorByteLength(t: Pick<GgufTensor, 'dims' | 'type'>): number {
  return t.dims.reduce((a, b) => a * b, 1) * GGML_TYPE_SIZE[t.type];
}

/** The alignment a file declares (general.alignment, u32, a power of two) or the default. */
export function fileAlignment(kvs: readonly GgufKv[]): number {
  const kv = kvs.find((k) => k.key === 'general.alignment');
  if (!kv) return GGUF_DEFAULT_ALIGNMENT;
  const a = kv.value;
  if (kv.type !== GgufType.UINT32 || typeof a !== 'number' || a <= 0 || (a & (a - 1)) !== 0) {
    throw new GgufError(`general.alignment must be a u32 power of two, got ${String(a)}`);
  }
  return a;
}

/**
 * Encodes a file as a list of buffers (header and infos, then each tensor's data and
 * padding), so a caller can write a large model without one more copy of it.
 */
export function encodeGguf(file: GgufFile): Buffer[] {
  const alignment = fileAlignment(file.kvs);
  const out = new Bytes();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_VERSION);
  out.u64(file.tensors.length);
  out.u64(file.kvs.length);
  const seen = new Set<string>();
  for (const kv of file.kvs) {
    if (seen.has(kv.key)) throw new GgufError(`duplicate key ${kv.key}`);
    seen.add(kv.key);
    out.str(kv.key);
    out.u32(kv.type);
    writeValue(out, kv.type, kv.value, kv.key);
  }
  let offset = 0;
  for (const t of file.tensors) {
    const size = tensorByteLength(t);
    if (t.dims.length < 1 || t.dims.length > 4) throw new GgufError(`tensor ${t.name}: 1 to 4 dimensions, got ${t.dims.length}`);
    if (t.data.length !== size) throw new GgufError(`tensor ${t.name}: shape needs ${size} bytes, data has ${t.data.length}`);
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(offset);
    offset += alignUp(size, alignment);
  }
  // ggml's reader seeks to the aligned data section only when there are tensors.
  if (file.tensors.length > 0) out.pad(alignment);
  const parts: Buffer[] = [out.bytes()];
  for (const t of file.tensors) {
    parts.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    const padding = alignUp(t.data.length, alignment) - t.data.length;
    if (padding > 0) parts.push(Buffer.alloc(padding));
  }
  return parts;
}

function writeValue(out: Bytes, type: GgufType, v: GgufItem, key: string): void {
  const bad = (): never => { throw new GgufError(`${key}: value ${String(v)} does not fit type ${GgufType[type] ?? type}`); };
  switch (type) {
    case GgufType.UINT8: return typeof v === 'number' ? out.u8(v) : bad();
    case GgufType.INT8: return typeof v === 'number' ? out.i8(v) : bad();
    case GgufType.UINT16: return typeof v === 'number' ? out.u16(v) : bad();
    case GgufType.INT16: return typeof v === 'number' ? out.i16(v) : bad();
    case GgufType.UINT32: return typeof v === 'number' ? out.u32(v) : bad();
    case GgufType.INT32: return typeof v === 'number' ? out.i32(v) : bad();
    case GgufType.FLOAT32: return typeof v === 'number' ? out.f32(v) : bad();
    case GgufType.FLOAT64: return typeof v === 'number' ? out.f64(v) : bad();
    case GgufType.UINT64: return typeof v === 'bigint' || typeof v === 'number' ? out.u64(v) : bad();
    case GgufType.INT64: return typeof v === 'bigint' || typeof v === 'number' ? out.i64(v) : bad();
    case GgufType.BOOL: return typeof v === 'boolean' ? out.u8(v ? 1 : 0) : bad();
    case GgufType.STRING: return typeof v === 'string' ? out.str(v) : bad();
    case GgufType.ARRAY: {
      if (typeof v !== 'object') return bad();
      out.u32(v.itemType);
      out.u64(v.items.length);
      for (const item of v.items) writeValue(out, v.itemType, item, key);
      return;
    }
    default:
      throw new GgufError(`${key}: unknown value type ${String(type)}`);
  }
}
