/**
 * Log-mel spectrogram as StyleTTS 2 (Kokoro's ancestor) computes it for its style encoder:
 * torchaudio MelSpectrogram (power 2, HTK mel scale, no filter normalisation, centred frames
 * with reflect padding, periodic Hann window of `winLength` centred in `nFft`), then
 * (log(1e-5 + mel) - mean) / std. Plain TypeScript with a radix-2 FFT.
 */

export interface MelOptions {
  sampleRate: number;
  /** A power of two. */
  nFft: number;
  winLength: number;
  hopLength: number;
  nMels: number;
  fMin: number;
  fMax?: number;
  logOffset: number;
  mean: number;
  std: number;
}

/** StyleTTS 2's settings (24 kHz, n_fft 2048, window 1200, hop 300, 80 bins, mean -4, std 4). */
export const STYLETTS2_MEL: MelOptions = { sampleRate: 24000, nFft: 2048, winLength: 1200, hopLength: 300, nMels: 80, fMin: 0, logOffset: 1e-5, mean: -4, std: 4 };

const hzToMel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const melToHz = (mel: number) => 700 * (10 ** (mel / 2595) - 1);

/** torchaudio.functional.melscale_fbanks(..., norm=None, mel_scale="htk"): [nFreqs][nMels]. */
export function melFilterBank(nFreqs: number, fMin: number, fMax: number, nMels: number, sampleRate: number): Float64Array[] {
  const allFreqs = Array.from({ length: nFreqs }, (_, i) => ((sampleRate / 2) * i) / (nFreqs - 1));
  const mMin = hzToMel(fMin);
  const mMax = hzToMel(fMax);
  const fPts = Array.from({ length: nMels + 2 }, (_, i) => melToHz(mMin + ((mMax - mMin) * i) / (nMels + 1)));
  return allFreqs.map((f) => {
    const row = new Float64Array(nMels);
    for (let m = 0; m < nMels; m++) {
      const down = (f - fPts[m]!) / (fPts[m + 1]! - fPts[m]!);
      const up = (fPts[m + 2]! - f) / (fPts[m + 2]! - fPts[m + 1]!);
      row[m] = Math.max(0, Math.min(down, up));
    }
    return row;
  });
}

/** In-place iterative radix-2 FFT over (re, im). */
function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const angle = (-2 * Math.PI) / size;
    const wRe = Math.cos(angle);
    const wIm = Math.sin(angle);
    for (let start = 0; start < n; start += size) {
      let curRe = 1;
      let curIm = 0;
      for (let k = 0; k < size / 2; k++) {
        const a = start + k;
        const b = a + size / 2;
        const tRe = re[b]! * curRe - im[b]! * curIm;
        const tIm = re[b]! * curIm + im[b]! * curRe;
        re[b] = re[a]! - tRe;
        im[b] = im[a]! - tIm;
        re[a] = re[a]! + tRe;
        im[a] = im[a]! + tIm;
        const nextRe = curRe * wRe - curIm * wIm;
        curIm = curRe * wIm + curIm * wRe;
        curRe = nextRe;
      }
    }
  }
}

/** Returns [nMels, frames] row-major and the frame count. */
export function logMelSpectrogram(samples: Float32Array, options: MelOptions): { data: Float32Array; frames: number } {
  const { nFft, winLength, hopLength, nMels } = options;
  if ((nFft & (nFft - 1)) !== 0) throw new Error(`nFft ${nFft} is not a power of two`);
  const pad = nFft / 2;
  // Reflect padding (torch.stft center=True); a clip shorter than the padding is padded with zeros instead.
  const padded = new Float32Array(samples.length + 2 * pad);
  padded.set(samples, pad);
  if (samples.length > pad) {
    for (let i = 0; i < pad; i++) {
      padded[pad - 1 - i] = samples[i + 1]!;
      padded[pad + samples.length + i] = samples[samples.length - 2 - i]!;
    }
  }
  const frames = 1 + Math.floor(samples.length / hopLength);
  const window = new Float64Array(nFft);
  const offset = Math.floor((nFft - winLength) / 2);
  for (let i = 0; i < winLength; i++) window[offset + i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / winLength);
  const nFreqs = nFft / 2 + 1;
  const bank = melFilterBank(nFreqs, options.fMin, options.fMax ?? options.sampleRate / 2, nMels, options.sampleRate);
  const data = new Float32Array(nMels * frames);
  const re = new Float64Array(nFft);
  const im = new Float64Array(nFft);
  for (let t = 0; t < frames; t++) {
    const start = t * hopLength;
    for (let i = 0; i < nFft; i++) {
      re[i] = (padded[start + i] ?? 0) * window[i]!;
      im[i] = 0;
    }
    fft(re, im);
    for (let m = 0; m < nMels; m++) {
      let energy = 0;
      for (let f = 0; f < nFreqs; f++) {
        const weight = bank[f]![m]!;
        if (weight > 0) energy += weight * (re[f]! * re[f]! + im[f]! * im[f]!);
      }
      data[m * frames + t] = (Math.log(options.logOffset + energy) - options.mean) / options.std;
    }
  }
  return { data, frames };
}
