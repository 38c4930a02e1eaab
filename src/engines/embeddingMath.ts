/**
 * Pooling and normalisation of token states into sentence vectors, and the `dimensions`
 * reduction (truncate, then renormalise) that Matryoshka-trained models allow.
 */

export type Pooling = "mean" | "cls" | "last";

/**
 * hidden: [batch, tokens, features] row-major; mask: [batch, tokens] (1 for real tokens).
 * Padding never contributes: mean averages masked tokens, last takes the last real token.
 */
export function pool(hidden: Float32Array, mask: ArrayLike<number | bigint>, batch: number, tokens: number, features: number, pooling: Pooling): Float32Array[] {
  const out: Float32Array[] = [];
  for (let b = 0; b < batch; b++) {
    const vector = new Float32Array(features);
    const row = (t: number) => (b * tokens + t) * features;
    if (pooling === "cls") {
      vector.set(hidden.subarray(row(0), row(0) + features));
    } else if (pooling === "last") {
      let last = 0;
      for (let t = 0; t < tokens; t++) if (Number(mask[b * tokens + t]) > 0) last = t;
      vector.set(hidden.subarray(row(last), row(last) + features));
    } else {
      let count = 0;
      for (let t = 0; t < tokens; t++) {
        if (Number(mask[b * tokens + t]) <= 0) continue;
        count++;
        const offset = row(t);
        for (let f = 0; f < features; f++) vector[f]! += hidden[offset + f]!;
      }
      if (count > 0) for (let f = 0; f < features; f++) vector[f]! /= count;
    }
    out.push(vector);
  }
  return out;
}

export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** The first `dimensions` components, renormalised to unit length when the model normalises. */
export function reduceDimensions(vector: Float32Array, dimensions: number, renormalize: boolean): Float32Array {
  if (dimensions >= vector.length) return vector;
  const truncated = vector.slice(0, dimensions);
  return renormalize ? normalize(truncated) : truncated;
}
