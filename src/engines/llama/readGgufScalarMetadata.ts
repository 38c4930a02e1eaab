import { open, type FileHandle } from "node:fs/promises";

/**
 * A GGUF file's metadata without its arrays, in node-llama-cpp's nested shape
 * (`metadata.general.architecture`, `metadata.tokenizer.chat_template`).
 *
 * `readGgufFileInfo` decodes every value, so a header with a real vocabulary (151,936
 * token strings, their types, the merges) takes 50 to 200 ms to read; the chat template
 * and the model's names are scalars. Here arrays are passed over: fixed-size ones by
 * seeking, string arrays by their length prefixes without decoding the text.
 */
export async function readGgufScalarMetadata(path: string): Promise<Record<string, unknown>> {
  const file = await open(path, "r");
  try {
    const cursor = new HeaderCursor(file);
    const magic = await cursor.bytes(4);
    if (magic.toString("latin1") !== "GGUF") throw new Error(`${path}: not a GGUF file`);
    const version = await cursor.u32();
    // Version 1 (2023) had 32-bit counts and lengths; llama.cpp no longer loads it.
    if (version !== 2 && version !== 3) throw new Error(`${path}: unsupported GGUF version ${version}`);
    await cursor.u64(); // tensor count
    const entries = await cursor.u64();
    const values = new Map<string, unknown>();
    for (let i = 0; i < entries; i++) {
      const key = await cursor.string();
      const type = await cursor.u32();
      if (type === ARRAY) await cursor.skipArray();
      else values.set(key, await cursor.scalar(type));
    }
    return nest(values);
  } finally {
    await file.close();
  }
}

const ARRAY = 9;
const STRING = 8;
/** Byte size of each fixed-size GGUF value type (u8, i8, u16, i16, u32, i32, f32, bool, -, -, u64, i64, f64). */
const FIXED_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/**
 * Reads ahead in chunks: most values are a few bytes, and a vocabulary is a few megabytes of
 * them. Measured on ten real-vocabulary headers in a fresh process: 64 KiB chunks cost about
 * 45 ms of CPU in all, 1 MiB chunks about 100 ms (fresh large buffers are slow to fault in).
 */
const CHUNK_BYTES = 64 * 1024;

class HeaderCursor {
  /** The bytes read last; `buffer` is the part of it the file filled. */
  private chunk = Buffer.alloc(0);
  private buffer = Buffer.alloc(0);
  private bufferStart = 0;
  private position = 0;

  constructor(private readonly file: FileHandle) {}

  /** The buffer offset of `count` bytes at the position, reading from the file only when they are not buffered. */
  private async at(count: number): Promise<number> {
    const offset = this.position - this.bufferStart;
    if (offset >= 0 && offset + count <= this.buffer.length) return offset;
    const size = Math.max(count, CHUNK_BYTES);
    const buffer = this.chunk.length >= size ? this.chunk : (this.chunk = Buffer.allocUnsafe(size));
    const { bytesRead } = await this.file.read(buffer, 0, size, this.position);
    if (bytesRead < count) throw new Error("GGUF header ends early");
    this.buffer = buffer.subarray(0, bytesRead);
    this.bufferStart = this.position;
    return 0;
  }

  async bytes(count: number): Promise<Buffer> {
    const offset = await this.at(count);
    this.position += count;
    return this.buffer.subarray(offset, offset + count);
  }

  async u32(): Promise<number> {
    return (await this.bytes(4)).readUInt32LE(0);
  }

  async u64(): Promise<number> {
    return Number((await this.bytes(8)).readBigUInt64LE(0));
  }

  async string(): Promise<string> {
    const length = await this.u64();
    return (await this.bytes(length)).toString("utf8");
  }

  /** One value as node-llama-cpp decodes it (64-bit integers as numbers where exact, else bigints). */
  async scalar(type: number): Promise<unknown> {
    if (type === STRING) return this.string();
    const size = FIXED_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    const bytes = await this.bytes(size);
    switch (type) {
      case 0:
        return bytes.readUInt8(0);
      case 1:
        return bytes.readInt8(0);
      case 2:
        return bytes.readUInt16LE(0);
      case 3:
        return bytes.readInt16LE(0);
      case 4:
        return bytes.readUInt32LE(0);
      case 5:
        return bytes.readInt32LE(0);
      case 6:
        return bytes.readFloatLE(0);
      case 7:
        return bytes.readUInt8(0) !== 0;
      case 10:
        return safeNumber(bytes.readBigUInt64LE(0));
      case 11:
        return safeNumber(bytes.readBigInt64LE(0));
      default:
        return bytes.readDoubleLE(0);
    }
  }

  async skipArray(): Promise<void> {
    const type = await this.u32();
    const count = await this.u64();
    if (type === STRING) return this.skipStrings(count);
    if (type === ARRAY) {
      for (let i = 0; i < count; i++) await this.skipArray();
      return;
    }
    const size = FIXED_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF array element type ${type}`);
    this.position += size * count;
  }

  /** Walks the length prefixes within the buffer and reads from the file only at its end. */
  private async skipStrings(count: number): Promise<void> {
    let remaining = count;
    while (remaining > 0) {
      const start = await this.at(8);
      const walked = walkLengthPrefixed(this.buffer, start, remaining);
      remaining -= walked.strings;
      this.position = this.bufferStart + walked.end;
    }
  }
}

/**
 * How many length-prefixed strings from `offset` have their prefix in the buffer (at most
 * `limit`), and where the last one ends. It runs once per vocabulary entry, mostly before the
 * JIT has warmed up: a DataView and small-integer offsets keep it about 0.5 ms for 151,936
 * entries (2.5 ms the first time; byte arithmetic with a 64-bit length took 43 ms, then 1.7).
 */
function walkLengthPrefixed(buffer: Buffer, offset: number, limit: number): { strings: number; end: number } {
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const lastPrefix = buffer.length - 8;
  let strings = 0;
  while (strings < limit && offset <= lastPrefix) {
    // Lengths are u64; a header string of 4 GiB or more is a corrupt file, not a vocabulary.
    if (view.getUint32(offset + 4, true) !== 0) throw new Error("GGUF header string longer than 4 GiB");
    offset += 8 + view.getUint32(offset, true);
    strings++;
  }
  return { strings, end: offset };
}

function safeNumber(value: bigint): number | bigint {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(value) : value;
}

/** Keys node-llama-cpp keeps as leaves: `tokenizer.chat_template.tool_use` stays one name under `tokenizer`. */
const LEAF_KEYS = ["general.license", "tokenizer.chat_template"];

/** Dotted keys as nested objects, as node-llama-cpp nests them. */
function nest(values: Map<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of values) {
    const leaf = LEAF_KEYS.find((prefix) => key.startsWith(`${prefix}.`));
    const parts = leaf ? [...leaf.split(".").slice(0, -1), key.slice(leaf.lastIndexOf(".") + 1)] : key.split(".");
    let node = root;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (next !== undefined && (typeof next !== "object" || next === null)) {
        // A key under a scalar one (llama.cpp never writes such pairs) keeps its full name.
        node = root;
        parts.splice(0, parts.length, key);
        break;
      }
      node = (next ?? (node[part] = {})) as Record<string, unknown>;
    }
    node[parts.at(-1)!] = value;
  }
  return root;
}
