import { describe, expect, it } from "vitest";
import { AUDIO_FORMATS, countVideoFrames, decodeAudio, encodeAudio, encodeVideo, probeMedia, type AudioFormat } from "../../src/media/ffmpeg.js";

const tone = (seconds: number, rate: number) => Float32Array.from({ length: seconds * rate }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate));

describe("ffmpeg (the real binary)", () => {
  it.each(Object.keys(AUDIO_FORMATS) as AudioFormat[])("encodes speech audio as %s that decodes back with the right length", async (format) => {
    const encoded = await encodeAudio(tone(1, 24000), 24000, format);
    expect(encoded.length).toBeGreaterThan(100);
    if (format === "pcm") {
      expect(encoded.length).toBe(24000 * 2);
      return;
    }
    const info = probeMedia(encoded);
    expect(info.streams[0]?.kind).toBe("audio");
    expect(info.durationSeconds).toBeGreaterThan(0.9);
    expect(info.durationSeconds).toBeLessThan(1.2);
    const decoded = await decodeAudio(encoded, 16000);
    expect(decoded.length).toBeGreaterThan(15000);
    expect(decoded.length).toBeLessThan(19000);
  });

  it("encodes RGB frames into an H.264 MP4 with the right frame count", async () => {
    const frames = Array.from({ length: 12 }, (_, f) => Buffer.alloc(64 * 48 * 3, f * 20));
    const mp4 = await encodeVideo(frames, 64, 48, 24);
    const info = probeMedia(mp4);
    expect(info.container).toContain("mp4");
    expect(info.streams[0]).toMatchObject({ kind: "video", codec: "h264", width: 64, height: 48 });
    expect(countVideoFrames(mp4)).toBe(12);
  });

  it("rejects input it cannot decode", async () => {
    await expect(decodeAudio(Buffer.from("this is not audio at all"), 16000)).rejects.toThrow();
  });
});
