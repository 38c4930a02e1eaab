import * as ort from "onnxruntime-node";

/**
 * Small tensor helpers for the diffusion pipeline: inputs are built in whatever element type
 * the exported session declares (float32 or float16 activations, int32 or int64 ids and
 * timesteps), and outputs read back as float32.
 */

export type SessionInputType = "float32" | "float16" | "int32" | "int64";

/** The declared element type and shape of a session input (throws naming the input when missing). */
export function inputInfo(session: ort.InferenceSession, name: string): { type: SessionInputType; shape: readonly (number | string)[] } {
  const meta = session.inputMetadata.find((m) => m.name === name);
  if (!meta) throw new Error(`the ONNX model has no input "${name}" (inputs: ${session.inputNames.join(", ")})`);
  if (!meta.isTensor) throw new Error(`the ONNX input "${name}" is not a tensor`);
  const type = meta.type as string;
  if (type !== "float32" && type !== "float16" && type !== "int32" && type !== "int64") {
    throw new Error(`the ONNX input "${name}" has element type ${type}, which Hearth does not feed`);
  }
  return { type, shape: meta.shape };
}

export function hasInput(session: ort.InferenceSession, name: string): boolean {
  return session.inputNames.includes(name);
}

/** A tensor of `type` holding `values` (numbers; integer types are rounded). */
export function tensorOf(type: SessionInputType, values: ArrayLike<number>, dims: readonly number[]): ort.Tensor {
  switch (type) {
    case "float32":
      return new ort.Tensor("float32", values instanceof Float32Array ? values : Float32Array.from(values), dims);
    case "float16":
      return new ort.Tensor("float16", toFloat16(values), dims);
    case "int32":
      return new ort.Tensor(
        "int32",
        Int32Array.from(values, (v) => Math.round(v)),
        dims,
      );
    case "int64":
      return new ort.Tensor(
        "int64",
        BigInt64Array.from(Array.from(values), (v) => BigInt(Math.round(v))),
        dims,
      );
  }
}

/** Converts a session output to float32 (float16 outputs arrive as Uint16Array bits). */
export function readFloat32(tensor: ort.Tensor): Float32Array {
  if (tensor.type === "float32") return tensor.data as Float32Array;
  if (tensor.type === "float16") return fromFloat16(tensor.data as Uint16Array);
  throw new Error(`expected a float tensor, got ${tensor.type}`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half from float, round to nearest even. */
export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    let half = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++;
  return sign | half;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

export function toFloat16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = floatToHalf(values[i]!);
  return out;
}

export function fromFloat16(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = halfToFloat(bits[i]!);
  return out;
}

/** Spherical interpolation between two noise tensors (falls back to linear when nearly parallel). */
export function slerp(a: Float32Array, b: Float32Array, t: number): Float32Array {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  const cos = dot / Math.sqrt(normA * normB);
  const out = new Float32Array(a.length);
  if (!Number.isFinite(cos) || Math.abs(cos) > 0.9995) {
    for (let i = 0; i < a.length; i++) out[i] = a[i]! * (1 - t) + b[i]! * t;
    return out;
  }
  const theta = Math.acos(cos);
  const sin = Math.sin(theta);
  const wa = Math.sin((1 - t) * theta) / sin;
  const wb = Math.sin(t * theta) / sin;
  for (let i = 0; i < a.length; i++) out[i] = a[i]! * wa + b[i]! * wb;
  return out;
}

export const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);
