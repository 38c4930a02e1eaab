import { describe, expect, it } from "vitest";
import { loopCrossfade } from "../../src/media/pcm.js";

/** A sine that does not fit a whole number of periods in the clip, so a plain cut would jump. */
const tone = (length: number) => Float32Array.from({ length }, (_, i) => Math.sin(i * 0.0123));

describe("loopCrossfade", () => {
  it("drops the overlap, keeps the middle as generated, and starts where the generated audio ran on past the end", () => {
    const overlap = 400;
    const generated = tone(4000 + overlap);
    const looped = loopCrossfade(generated, overlap);
    expect(looped.length).toBe(4000);
    expect(looped.subarray(overlap)).toEqual(generated.subarray(overlap, 4000));
    // Played around, sample 3999 is followed by sample 0, which is (almost all) generated sample 4000.
    expect(looped[0]).toBeCloseTo(generated[4000]!, 2);
    expect(looped[overlap - 1]).toBeCloseTo(generated[overlap - 1]!, 2);
  });

  it("leaves no step at the seam larger than the signal's own steps, where a plain cut jumps", () => {
    const overlap = 400;
    const generated = tone(4000 + overlap);
    const step = (a: Float32Array) => Math.abs(a[0]! - a.at(-1)!);
    const ownStep = Math.max(...Array.from({ length: 100 }, (_, i) => Math.abs(generated[i + 1]! - generated[i]!)));
    expect(step(generated.slice(0, 4000))).toBeGreaterThan(10 * ownStep);
    expect(step(loopCrossfade(generated, overlap))).toBeLessThanOrEqual(ownStep * 1.5);
  });

  it("returns the samples as they are without an overlap, and refuses an overlap longer than half the audio", () => {
    const samples = tone(100);
    expect(loopCrossfade(samples, 0)).toBe(samples);
    expect(() => loopCrossfade(samples, 60)).toThrow(RangeError);
  });
});
