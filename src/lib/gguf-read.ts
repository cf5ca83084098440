/**
 * A small GGUF (version 2 and 3) reader: enough to copy a vocab-only file's tokenizer
 * metadata into a model of our own and to check what our writer produced. Pure: it reads a
 * Buffer; tensor data stays a view into it.
 */
import {
  GGML_TYPE_SIZE, GGUF_MAGIC, GgmlType, GgufError, GgufType, fileAlignment, tensorByteLength,
  type GgufArray, type GgufItem, type GgufKv,
} from './gguf.js';

export interface GgufTensorInfo {
  name: string;
  dims: number[];
  type: number;
  /** From the start of the data section. */
  offset: number;
  /** A view of the tensor's bytes (F32/F16 only; other types get an empty view). */
  data: Buffer;
}

export interface ParsedGguf {
  version: number;
  kvs: GgufKv[];
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute file offset of the data section. */
  dataOffset: number;
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}

  private need(n: number): number {
    if (this.pos + n > this.buf.length) throw new GgufError(`truncated: need ${n} bytes at offset ${this.pos}, file has ${this.buf.length}`);
    const at = this.pos;
    this.pos += n;
    return at;
  }
  u8(): number { return this.buf.readUInt8(this.need(1)); }
  i8(): number { return this.buf.readInt8(this.need(1)); }
  u16(): number { return this.buf.readUInt16LE(this.need(2)); }
  i16(): number { return this.buf.readInt16LE(this.need(2)); }
  u32(): number { return this.buf.readUInt32LE(this.need(4)); }
  i32(): number { return this.buf.readInt32LE(this.need(4)); }
  f32(): number { return this.buf.readFloatLE(this.need(4)); }
  f64(): number { return this.buf.readDoubleLE(this.need(8)); }
  u64(): bigint { return this.buf.readBigUInt64LE(this.need(8)); }
  i64(): bigint { return this.buf.readBigInt64LE(this.need(8)); }
  /** A u64 that must fit a JS number (counts, lengths, offsets). */
  size(what: string): number {
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`${what} ${v} is too large`);
    return Number(v);
  }
  str(): string {
    const n = this.size('string length');
    const at = this.need(n);
    return this.buf.toString('utf8', at, at + n);
  }
}

export function readGguf(buf: Buffer): ParsedGguf {
  const r = new Reader(buf);
  const { version, nTensors, kvs } = readHead(r);
  const alignment = fileAlignment(kvs);
  const infos: Omit<GgufTensorInfo, 'data'>[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = r.str();
    const nDims = r.u32();
    if (nDims > 4) throw new GgufError(`tensor ${name}: ${nDims} dimensions (at most 4)`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(r.size(`tensor ${name} dimension`));
    const type = r.u32();
    const offset = r.size(`tensor ${name} offset`);
    if (offset % alignment !== 0) throw new GgufError(`tensor ${name}: offset ${offset} is not a multiple of ${alignment}`);
    infos.push({ name, dims, type, offset });
  }
  const dataOffset = nTensors > 0 ? Math.ceil(r.pos / alignment) * alignment : r.pos;
  const tensors = infos.map((t) => ({ ...t, data: tensorView(buf, dataOffset, t) }));
  return { version, kvs, tensors, alignment, dataOffset };
}

/**
 * The version and metadata alone, from the start of a file (a model's tensors can be gigabytes:
 * a reader of its tokenizer reads only what comes before them). Throws GgufError ("truncated")
 * when `buf` ends inside the metadata.
 */
export function readGgufMetadata(buf: Buffer): { version: number; kvs: GgufKv[] } {
  const { version, kvs } = readHead(new Reader(buf));
  return { version, kvs };
}

function readHead(r: Reader): { version: number; nTensors: number; kvs: GgufKv[] } {
  const magic = r.u32();
  if (magic !== GGUF_MAGIC) throw new GgufError(`not a GGUF file (magic 0x${magic.toString(16)})`);
  const version = r.u32();
  if (version < 2 || version > 3) throw new GgufError(`unsupported GGUF version ${version} (2 or 3 expected)`);
  const nTensors = r.size('tensor count');
  const nKv = r.size('KV count');
  const kvs: GgufKv[] = [];
  for (let i = 0; i < nKv; i++) {
    const key = r.str();
    const type = r.u32() as GgufType;
    kvs.push({ key, type, value: readValue(r, type, key) });
  }
  return { version, nTensors, kvs };
}

function tensorView(buf: Buffer, dataOffset: number, t: Omit<GgufTensorInfo, 'data'>): Buffer {
  if (!(t.type in GGML_TYPE_SIZE)) return buf.subarray(0, 0);
  const start = dataOffset + t.offset;
  const end = start + tensorByteLength({ dims: t.dims, type: t.type as GgmlType });
  if (end > buf.length) throw new GgufError(`tensor ${t.name}: data ends at ${end}, past the end of the file (${buf.length})`);
  return buf.subarray(start, end);
}

function readValue(r: Reader, type: GgufType, key: string): GgufItem {
  switch (type) {
    case GgufType.UINT8: return r.u8();
    case GgufType.INT8: return r.i8();
    case GgufType.UINT16: return r.u16();
    case GgufType.INT16: return r.i16();
    case GgufType.UINT32: return r.u32();
    case GgufType.INT32: return r.i32();
    case GgufType.FLOAT32: return r.f32();
    case GgufType.FLOAT64: return r.f64();
    case GgufType.UINT64: return r.u64();
    case GgufType.INT64: return r.i64();
    case GgufType.BOOL: {
      const b = r.u8();
      if (b > 1) throw new GgufError(`${key}: bool byte ${b} (0 or 1 expected)`);
      return b === 1;
    }
    case GgufType.STRING: return r.str();
    case GgufType.ARRAY: {
      const itemType = r.u32() as GgufType;
      const n = r.size(`${key} array length`);
      const arr: GgufArray = { itemType, items: new Array<GgufItem>(n) };
      for (let i = 0; i < n; i++) arr.items[i] = readValue(r, itemType, key);
      return arr;
    }
    default:
      throw new GgufError(`${key}: unknown value type ${String(type)}`);
  }
}

/** The value of `key`, or undefined. */
export function kvValue(kvs: readonly GgufKv[], key: string): GgufItem | undefined {
  return kvs.find((k) => k.key === key)?.value;
}
