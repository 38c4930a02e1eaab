/**
 * Seeded standard-normal noise: xoshiro128** seeded through splitmix32, Box-Muller pairs.
 * Integer arithmetic plus V8's Math.log/sqrt/cos, so one seed gives the same bits on every
 * run: the root of "same seed, same prompt, same settings, same image".
 */
export class GaussianNoise {
  private readonly s = new Uint32Array(4);
  private spare: number | undefined;

  constructor(seed: number) {
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      // splitmix32
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
    if (this.s.every((v) => v === 0)) this.s[0] = 1;
  }

  /** Uniform in (0, 1): never 0, so log() below is finite. */
  uniform(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return (result + 0.5) / 4294967296;
  }

  normal(): number {
    if (this.spare !== undefined) {
      const value = this.spare;
      this.spare = undefined;
      return value;
    }
    const radius = Math.sqrt(-2 * Math.log(this.uniform()));
    const angle = 2 * Math.PI * this.uniform();
    this.spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }

  fill(out: Float32Array): Float32Array {
    for (let i = 0; i < out.length; i++) out[i] = this.normal();
    return out;
  }

  sample(count: number): Float32Array {
    return this.fill(new Float32Array(count));
  }
}

const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

/**
 * Seeds in requests are signed (the reference allows -999999999..999999999); the noise
 * generator takes them as unsigned 32-bit values.
 */
export const toNoiseSeed = (seed: number) => seed >>> 0;
