import { setImmediate } from "node:timers/promises";

/** Raw PCM helpers for the speech formats Hearth writes without ffmpeg. */

const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * Float samples in [-1, 1] to 16-bit signed little-endian PCM (clipped; NaN is silence). Written
 * through an Int16Array, not Buffer.writeInt16LE per sample: a long speech job's 4 million
 * samples took 60-68 ms of the event loop that way, and take 18 ms now.
 */
export function floatToPcm16(samples: Float32Array): Buffer {
  const pcm = new Int16Array(samples.length);
  writePcm16(samples, pcm, 0, samples.length);
  const out = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  // WAV and raw PCM are little-endian whatever the host is.
  if (!LITTLE_ENDIAN) out.swap16();
  return out;
}

/** Samples [from, to) of `samples` into `pcm` at the same indexes. */
function writePcm16(samples: Float32Array, pcm: Int16Array, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const x = samples[i]!;
    // NaN is silence; the rest clipped to [-1, 1].
    const s = Number.isNaN(x) ? 0 : Math.min(1, Math.max(-1, x));
    const v = s < 0 ? s * 0x8000 : s * 0x7fff;
    // Math.round(v) without the call: v + 32768.5 is positive, so | 0 floors it.
    pcm[i] = ((v + 32768.5) | 0) - 32768;
  }
}

/**
 * Samples converted per turn of the event loop by `floatPartsToPcm16` (a few milliseconds): a
 * long speech's whole file (4,096 characters of digits are 17 minutes of audio, 24.5 million
 * samples) concatenated, converted in one call and copied after its header held the loop 0.8 s
 * on the 2-core host, where first touching fresh memory costs about 3 ms a megabyte.
 */
const PCM_SLICE_SAMPLES = 1 << 19;

/**
 * Consecutive chunks of mono float audio as one buffer of 16-bit PCM, after `headerBytes` left
 * for the caller (a WAV header): the chunks are never concatenated, and the conversion lets
 * other callbacks run between slices.
 */
export async function floatPartsToPcm16(parts: readonly Float32Array[], options: { headerBytes?: number; signal?: AbortSignal } = {}): Promise<Buffer> {
  const headerBytes = options.headerBytes ?? 0;
  const total = parts.reduce((n, part) => n + part.length, 0);
  // Allocated uninitialised: the header and every sample are written below.
  const out = Buffer.allocUnsafe(headerBytes + total * 2);
  // The samples' offset is even (the header is 44 bytes), as an Int16Array view needs.
  const pcm = new Int16Array(out.buffer, out.byteOffset + headerBytes, total);
  let offset = 0;
  for (const part of parts) {
    for (let from = 0; from < part.length; from += PCM_SLICE_SAMPLES) {
      const to = Math.min(part.length, from + PCM_SLICE_SAMPLES);
      writePcm16(part, pcm.subarray(offset), from, to);
      if (total > PCM_SLICE_SAMPLES) {
        await setImmediate();
        options.signal?.throwIfAborted();
      }
    }
    offset += part.length;
  }
  if (!LITTLE_ENDIAN) out.subarray(headerBytes).swap16();
  return out;
}

/**
 * A 44-byte RIFF/WAVE header for mono 16-bit PCM. With `dataBytes` undefined (a stream whose
 * length is not known yet) both size fields are 0xFFFFFFFF, the convention streaming servers
 * use and decoders read as "until the end of the stream".
 */
export const WAV_HEADER_BYTES = 44;

export function wavHeader(sampleRate: number, dataBytes?: number): Buffer {
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  const unknown = dataBytes === undefined;
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(unknown ? 0xffffffff : 36 + dataBytes, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(unknown ? 0xffffffff : dataBytes, 40);
  return header;
}

/** Consecutive chunks of mono float audio as one buffer (a single chunk is returned as is). */
export function concatSamples(parts: readonly Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * A clip that plays around without a seam: `samples` holds the clip plus `overlap` samples
 * more, and that extra tail is faded out over the clip's faded-in start. The result is
 * `overlap` shorter; its last sample runs on into its first exactly as the generated audio ran
 * on past the clip's end, so the loop point is where the model itself continued.
 */
export function loopCrossfade(samples: Float32Array, overlap: number): Float32Array {
  if (overlap <= 0) return samples;
  if (overlap * 2 > samples.length) throw new RangeError(`a crossfade of ${overlap} samples needs at least twice as many samples, not ${samples.length}`);
  const length = samples.length - overlap;
  const out = samples.slice(0, length);
  for (let i = 0; i < overlap; i++) {
    // Equal-power fade: uncorrelated audio keeps its loudness through the seam.
    const fadeIn = Math.sin(((i + 0.5) / overlap) * (Math.PI / 2));
    const fadeOut = Math.cos(((i + 0.5) / overlap) * (Math.PI / 2));
    out[i] = samples[i]! * fadeIn + samples[length + i]! * fadeOut;
  }
  return out;
}
