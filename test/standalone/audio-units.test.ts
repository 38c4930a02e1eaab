import { describe, expect, it } from "vitest";
import { splitSentences } from "../../src/api/audio/splitSentences.js";
import { formatTimestamp, toSrt, toVtt } from "../../src/api/audio/TranscriptionService.js";
import { musicDuration } from "../../src/api/audio/AudioJobService.js";
import { countCharacters, musicCost, speechCost, transcriptionCost, UnpricedDurationError } from "../../src/billing/pricing.js";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { logMelSpectrogram, melFilterBank, STYLETTS2_MEL } from "../../src/engines/kokoro/melSpectrogram.js";
import { kokoroStandardVoices } from "../../src/engines/kokoro/kokoroStandardVoices.js";
import { KOKORO_V1_VOICES } from "../../src/engines/kokoro/kokoroVoices.js";
import { compressionRatio, isSilenceError } from "../../src/engines/whisper/WhisperEngine.js";
import { WorkQueue } from "../../src/engines/WorkQueue.js";
import { atempoChain, createAudioEncoderStream, stretchAudio } from "../../src/media/ffmpeg.js";
import { probeMedia } from "../helpers/mediaProbe.js";
import { floatPartsToPcm16, floatToPcm16, wavHeader } from "../../src/media/pcm.js";

const tone = (seconds: number, rate: number, hz = 440) => Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => 0.5 * Math.sin((2 * Math.PI * hz * i) / rate));

describe("sentence splitting", () => {
  it("splits at sentence ends, not at abbreviations, initials or decimals, and keeps closing quotes", () => {
    expect(splitSentences('Hello there. Dr. Smith paid $3.50 today! J. K. Rowling wrote it. Is it "good?" Yes… fine\nNew line', 300)).toEqual([
      "Hello there.",
      "Dr. Smith paid $3.50 today!",
      "J. K. Rowling wrote it.",
      'Is it "good?"',
      "Yes…",
      "fine",
      "New line",
    ]);
  });

  it("cuts long sentences at clause marks, then spaces, never above the limit, losing no word", () => {
    const text = `${"word ".repeat(80)}end, ${"x".repeat(130)}.`;
    const pieces = splitSentences(text, 60);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(60);
    expect(pieces.join(" ").replace(/\s+/g, "")).toBe(text.replace(/\s+/g, ""));
  });
});

describe("subtitles", () => {
  it("formats SRT and WebVTT timestamps and cues", () => {
    expect(formatTimestamp(3725.5, ",")).toBe("01:02:05,500");
    expect(formatTimestamp(0.0004, ".")).toBe("00:00:00.000");
    const segments = [
      { text: "Hello.", start: 0, end: 1.25 },
      { text: "World.", start: 1.25, end: 2 },
    ];
    expect(toSrt(segments)).toBe("1\n00:00:00,000 --> 00:00:01,250\nHello.\n\n2\n00:00:01,250 --> 00:00:02,000\nWorld.\n");
    expect(toVtt(segments)).toBe("WEBVTT\n\n00:00:00.000 --> 00:00:01.250\nHello.\n\n00:00:01.250 --> 00:00:02.000\nWorld.\n");
  });
});

describe("audio pricing", () => {
  const entry = (pricing: unknown, type = "tts") => ModelEntry.parse({ id: "m", type, backend: type === "tts" ? "kokoro" : "whisper", file: "/x", pricing });
  it("charges speech per thousand characters (code points) and transcription per audio millisecond, rounding up to the micro", () => {
    expect(countCharacters("héllo 👋")).toBe(7);
    const [line] = speechCost(entry({ per_thousand_characters: { usd: 0.015, diem: 0.03 } }), 1234);
    expect(line).toMatchObject({ sku: "m-tts-kchar", units: 1.234, usdMicros: 18_510, diemMicros: 37_020 });
    expect(speechCost(entry({ input: { usd: 3.5, diem: 35 } }), 1000)[0]).toMatchObject({ sku: "m-tts-mchar", usdMicros: 3_500 });
    expect(speechCost(entry(undefined), 1000)).toEqual([]);
    const [asr] = transcriptionCost(entry({ per_audio_second: { usd: 0.0001, diem: 0.0001 } }, "asr"), 12.3456);
    expect(asr).toMatchObject({ sku: "m-asr-second", units: 12.346, usdMicros: 1235 });
  });

  it("charges music per second, per generation or by duration tier", () => {
    const music = (pricing: unknown) => ModelEntry.parse({ id: "m", type: "music", backend: "transformers", file: "/x", pricing });
    expect(musicCost(music({ per_second: { usd: 0.001, diem: 0.002 } }), 12)).toEqual([expect.objectContaining({ sku: "m-music-second", usdMicros: 12_000, diemMicros: 24_000 })]);
    expect(musicCost(music({ generation: { usd: 0.02, diem: 0.02 } }), 12)).toEqual([expect.objectContaining({ sku: "m-music-generation", usdMicros: 20_000 })]);
    const tiers = music({ durations: { short: { usd: 0.1, diem: 0.1, min_seconds: 1, max_seconds: 10 }, long: { usd: 0.3, diem: 0.3, min_seconds: 11, max_seconds: 30 } } });
    expect(musicCost(tiers, 20)).toEqual([expect.objectContaining({ sku: "m-music-long", usdMicros: 300_000 })]);
    expect(() => musicCost(tiers, 31)).toThrow(UnpricedDurationError);
    expect(musicCost(music(undefined), 12)).toEqual([]);
  });
});

describe("music durations", () => {
  const music = (settings: unknown) => ModelEntry.parse({ id: "m", type: "music", backend: "transformers", file: "/x", music: settings });
  it("takes the default, a number or a numeric string within min..max, or only the listed options when the model has them", () => {
    const ranged = music({ minDurationSeconds: 5, maxDurationSeconds: 20, defaultDurationSeconds: 8 });
    expect(musicDuration(ranged, undefined)).toBe(8);
    expect(musicDuration(ranged, 20)).toBe(20);
    expect(musicDuration(ranged, "5")).toBe(5);
    for (const outside of [4, 21, "30"]) expect(() => musicDuration(ranged, outside)).toThrow(/5 to 20 seconds/);
    const listed = music({ minDurationSeconds: 5, maxDurationSeconds: 20, defaultDurationSeconds: 10, durationOptions: [10, 20] });
    expect(musicDuration(listed, 20)).toBe(20);
    expect(() => musicDuration(listed, 15)).toThrow(/10, 20 seconds/);
  });
});

describe("PCM framing and ffmpeg streaming", () => {
  it("writes exact and unknown-length WAV headers that ffmpeg reads", () => {
    const data = floatToPcm16(tone(0.5, 24000));
    expect(data.length).toBe(24000);
    expect(data.readInt16LE(2 * 12)).toBeGreaterThan(0);
    const exact = probeMedia(Buffer.concat([wavHeader(24000, data.length), data]));
    expect(exact.container).toBe("wav");
    expect(exact.durationSeconds).toBeCloseTo(0.5, 1);
    const streamed = probeMedia(Buffer.concat([wavHeader(24000), data]));
    expect(streamed.durationSeconds).toBeCloseTo(0.5, 1);
    expect(floatToPcm16(Float32Array.of(2, -2)).readInt16LE(2)).toBe(-32768);
  });

  it("converts float samples to 16-bit little-endian PCM: scaled, rounded, clipped, NaN as silence", () => {
    const samples = Float32Array.of(0, 1, -1, 0.5, -0.5, 2, -2, Number.NaN, 1e-6, -1e-6, 0.25, -0.999);
    const pcm = floatToPcm16(samples);
    expect(pcm.length).toBe(samples.length * 2);
    const values = Array.from({ length: samples.length }, (_, i) => pcm.readInt16LE(i * 2));
    expect(values).toEqual([0, 32767, -32768, 16384, -16384, 32767, -32768, 0, 0, 0, 8192, -32735]);
    // The bytes are little-endian: 0x7fff is ff 7f.
    expect([...pcm.subarray(2, 4)]).toEqual([0xff, 0x7f]);
  });

  it("converts consecutive chunks into one PCM buffer after a header's room, as the whole would be, in slices, and stops on an abort", async () => {
    // One chunk longer than a slice (2^19 samples), one empty, and small ones around them.
    const parts = [tone(0.1, 24000), tone(30, 24000, 330), new Float32Array(0), Float32Array.of(2, -2, Number.NaN)];
    const whole = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const part of parts) {
      whole.set(part, offset);
      offset += part.length;
    }
    const framed = await floatPartsToPcm16(parts, { headerBytes: 44 });
    expect(framed.length).toBe(44 + whole.length * 2);
    expect(framed.subarray(44).equals(floatToPcm16(whole))).toBe(true);
    expect((await floatPartsToPcm16(parts)).equals(floatToPcm16(whole))).toBe(true);
    const aborted = new AbortController();
    aborted.abort();
    await expect(floatPartsToPcm16(parts, { signal: aborted.signal })).rejects.toThrow();
  });

  it.each(["mp3", "opus", "aac", "flac"] as const)("encodes %s while input still arrives: bytes come out before the input ends", async (format) => {
    const encoder = createAudioEncoderStream(24000, format);
    const chunks: Buffer[] = [];
    encoder.output.on("data", (c: Buffer) => chunks.push(c));
    await encoder.write(tone(1, 24000));
    for (let i = 0; i < 100 && chunks.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(chunks.length, "output before end of input").toBeGreaterThan(0);
    await encoder.write(tone(1, 24000, 220));
    encoder.end();
    await encoder.done;
    const info = probeMedia(Buffer.concat(chunks));
    expect(info.streams[0]?.kind).toBe("audio");
    expect(info.durationSeconds).toBeGreaterThan(1.8);
    expect(info.durationSeconds).toBeLessThan(2.3);
  });

  it("time-stretches without the model's help (atempo chains for 0.25 and 4)", async () => {
    expect(atempoChain(4)).toBe("atempo=2,atempo=2");
    expect(atempoChain(0.25)).toBe("atempo=0.5,atempo=0.5");
    expect(atempoChain(1.5)).toBe("atempo=1.5");
    const faster = await stretchAudio(tone(1, 16000), 16000, 2);
    expect(faster.length).toBeGreaterThan(7000);
    expect(faster.length).toBeLessThan(9000);
  });
});

describe("speaker-encoder features", () => {
  it("computes StyleTTS 2 log-mels: a 1 kHz tone peaks in the right bin", () => {
    const { data, frames } = logMelSpectrogram(tone(1, 24000, 1000), STYLETTS2_MEL);
    expect(frames).toBe(81);
    const bank = melFilterBank(1025, 0, 12000, 80, 24000);
    const bin1k = Math.round((1000 / 12000) * 1024);
    const expected = bank[bin1k]!.indexOf(Math.max(...bank[bin1k]!));
    const middle = Array.from({ length: 80 }, (_, m) => data[m * frames + 40]!);
    expect(Math.abs(middle.indexOf(Math.max(...middle)) - expected)).toBeLessThanOrEqual(1);
  });
});

describe("engine helpers", () => {
  it("recognises transformers.js' error on windows without tokens (silence) as empty text", () => {
    expect(isSilenceError(new Error("token_ids must be a non-empty array of integers."))).toBe(true);
    expect(isSilenceError(new Error("something else"))).toBe(false);
  });

  it("runs jobs one at a time and answers 503 past the wait limit", async () => {
    const queue = new WorkQueue("m", 1);
    const order: number[] = [];
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((r) => (release = r)).then(() => order.push(1)));
    const second = queue.run(async () => order.push(2));
    await expect(queue.run(async () => 3)).rejects.toMatchObject({ status: 503 });
    release();
    await Promise.all([first, second]);
    expect(order).toEqual([1, 2]);
    expect(queue.stats()).toEqual({ busy: 0, waiting: 0 });
  });
});

describe("standard voices and Whisper statistics", () => {
  it("maps the standard voices to Kokoro's namesakes, else a voice of the same gender, English first", () => {
    expect(kokoroStandardVoices(KOKORO_V1_VOICES)).toEqual({
      alloy: "af_alloy",
      ash: "am_michael",
      ballad: "bm_george",
      coral: "af_heart",
      echo: "am_echo",
      fable: "bm_fable",
      nova: "af_nova",
      onyx: "am_onyx",
      sage: "af_sarah",
      shimmer: "af_bella",
      verse: "am_puck",
      marin: "af_kore",
      cedar: "am_fenrir",
    });
    // Only Japanese and Spanish voices: by gender; only women: everyone gets the first voice of the right gender or the first voice.
    expect(kokoroStandardVoices(["jf_alpha", "em_alex", "jm_kumo"])).toMatchObject({ alloy: "jf_alpha", onyx: "em_alex", fable: "em_alex" });
    expect(kokoroStandardVoices(["zf_xiaobei"])).toMatchObject({ onyx: "zf_xiaobei", nova: "zf_xiaobei" });
    expect(kokoroStandardVoices([])).toEqual({});
  });

  it("computes the compression ratio as openai/whisper does: UTF-8 bytes over zlib bytes", () => {
    expect(compressionRatio("")).toBe(0);
    // Repetition compresses: a looping transcript scores far above Whisper's 2.4 threshold, plain text below it.
    expect(compressionRatio("the same words again ".repeat(20))).toBeGreaterThan(2.4);
    expect(compressionRatio("Hello there, this is an ordinary sentence.")).toBeLessThan(2.4);
  });
});
