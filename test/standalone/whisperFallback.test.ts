import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TranscribeOptions, TranscriptionResult } from "../../src/engines/types.js";
import { WhisperEngine } from "../../src/engines/whisper/WhisperEngine.js";
import { tinyWhisperEntry } from "../helpers/testServer.js";

/**
 * openai/whisper's temperature fallback and silence rule on the tiny Whisper, whose random text
 * is improbable (an average log probability near -3) and never looks silent (no-speech
 * probability near 0): which temperature a window ends at shows what the rules decided.
 */

const RATE = 16000;
/** A gliding tone of `seconds`: the tiny model writes a segment per 30 s window of it. */
const tone = (seconds: number) => Float32Array.from({ length: seconds * RATE }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (200 + (i % RATE) / 40) * i) / RATE));

const engines: WhisperEngine[] = [];
const load = async (transcription: Record<string, unknown> = {}) => {
  const engine = await WhisperEngine.load(tinyWhisperEntry({ transcription }), false);
  engines.push(engine);
  return engine;
};
let byDefault: WhisperEngine;
let greedyOnly: WhisperEngine;
beforeAll(async () => {
  [byDefault, greedyOnly] = await Promise.all([load(), load({ fallbackTemperatures: [] })]);
});
afterAll(async () => {
  await Promise.all(engines.map((e) => e.dispose()));
});

const transcribe = (engine: WhisperEngine, options: Partial<TranscribeOptions> = {}): Promise<TranscriptionResult> =>
  engine.transcribe({ audio: tone(40), language: "en", timestamps: ["segment"], ...options });
const temperatures = (r: TranscriptionResult) => r.segments.map((s) => s.temperature);

describe("Whisper's temperature fallback", () => {
  it("decodes a window whose text is improbable again at each fallback temperature, keeps the last, and gives the same transcript every time", async () => {
    const greedy = await transcribe(greedyOnly);
    expect(greedy.segments.length).toBe(2);
    expect(temperatures(greedy)).toEqual([0, 0]);
    for (const s of greedy.segments) expect(s.avgLogprob).toBeLessThan(-1);
    const fallen = await transcribe(byDefault);
    expect(fallen.segments.length).toBeGreaterThan(0);
    expect(new Set(temperatures(fallen))).toEqual(new Set([1]));
    expect(fallen.text).not.toBe(greedy.text);
    // Sampled after a greedy decode, yet reproducible: the sampling is seeded by the window and the attempt.
    expect(await transcribe(byDefault)).toEqual(fallen);
  });

  it("keeps the greedy decode when it passes the thresholds; text over the compression threshold falls back too", async () => {
    const lenient = await load({ logprobThreshold: -100 });
    expect(await transcribe(lenient)).toEqual(await transcribe(greedyOnly));
    // A compression threshold below any text's ratio fails every decode: the fallback runs to its last temperature.
    const strict = await load({ logprobThreshold: -100, compressionRatioThreshold: 0.01, fallbackTemperatures: [0.5, 0.7] });
    expect(new Set(temperatures(await transcribe(strict)))).toEqual(new Set([0.7]));
  });

  it("samples once at a request's own temperature, and reports avg_logprob under the model's distribution, not the sharpened one", async () => {
    const greedy = await transcribe(greedyOnly);
    // Near 0 a sample is the greedy token: the same tokens, so the same log probabilities (a
    // temperature-sharpened distribution would put them near 0).
    const cold = await transcribe(byDefault, { temperature: 0.001 });
    expect(temperatures(cold)).toEqual([0.001, 0.001]);
    expect(cold.segments.map((s) => s.tokens)).toEqual(greedy.segments.map((s) => s.tokens));
    for (const [i, s] of cold.segments.entries()) expect(s.avgLogprob).toBeCloseTo(greedy.segments[i]!.avgLogprob!, 3);
  });

  it("treats a window as silence, with no text and no fallback, when its no-speech probability passes noSpeechThreshold and its text is improbable", async () => {
    const silent = await transcribe(await load({ noSpeechThreshold: 0 }));
    expect(silent).toMatchObject({ text: "", segments: [], outputTokens: 0 });
    // Probable text is speech whatever the no-speech probability.
    const heard = await transcribe(await load({ noSpeechThreshold: 0, logprobThreshold: -100 }));
    expect(heard.text).toBe((await transcribe(greedyOnly)).text);
  });
});
