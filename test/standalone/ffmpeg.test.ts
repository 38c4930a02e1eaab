import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  AUDIO_FORMATS,
  configureFfmpeg,
  createAudioEncoderStream,
  countVideoFrames,
  decodeAudio,
  encodeAudio,
  encodeVideo,
  encodeVideoStream,
  ffmpegPath,
  probeMedia,
  type AudioFormat,
} from "../../src/media/ffmpeg.js";

const tone = (seconds: number, rate: number) => Float32Array.from({ length: seconds * rate }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate));

describe("ffmpeg (the real binary)", () => {
  it("encodes consecutive chunks as the one file they make, FLAC's total length included", async () => {
    const parts = [tone(1, 24000), tone(0.5, 24000), tone(1, 24000)];
    const flac = await encodeAudio(parts, 24000, "flac");
    // STREAMINFO's 36-bit total sample count (bytes 21.5 to 25), which ffmpeg leaves 0 on a pipe.
    expect((flac[21]! & 0x0f) * 2 ** 32 + flac.readUInt32BE(22)).toBe(60000);
    const decoded = await decodeAudio(flac, 24000);
    expect(decoded.length).toBe(60000);
  });

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

  it("succeeds when ffmpeg closes its output well before its process exits (as it can on a loaded machine)", async () => {
    // The real ffmpeg, run by a shell that keeps the process alive 300 ms after stdout is closed.
    const dir = mkdtempSync(join(tmpdir(), "hearth-slow-exit-"));
    const wrapper = join(dir, "ffmpeg");
    writeFileSync(wrapper, `#!/bin/sh\n"${ffmpegPath()}" "$@"\nstatus=$?\nexec 1>&-\nsleep 0.3\nexit $status\n`);
    chmodSync(wrapper, 0o755);
    const real = ffmpegPath();
    configureFfmpeg(wrapper);
    try {
      const frames = Array.from({ length: 6 }, (_, f) => Buffer.alloc(32 * 32 * 3, f * 40));
      expect(countVideoFrames(await encodeVideo(frames, 32, 32, 12))).toBe(6);
      const encoded = await encodeAudio(tone(1, 24000), 24000, "mp3");
      expect(probeMedia(encoded).durationSeconds).toBeGreaterThan(0.9);
      const stream = createAudioEncoderStream(24000, "mp3");
      const chunks: Buffer[] = [];
      stream.output.on("data", (chunk: Buffer) => chunks.push(chunk));
      await stream.write(tone(1, 24000));
      stream.end();
      await stream.done;
      expect(probeMedia(Buffer.concat(chunks)).durationSeconds).toBeGreaterThan(0.9);
    } finally {
      configureFfmpeg(real);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an input stream destroyed with an error after an abort that came before ffmpeg started raises nothing (the video job stops that way at shutdown)", async () => {
    const frames = new PassThrough();
    const abort = new AbortController();
    abort.abort(new Error("shutting down"));
    await expect(encodeVideoStream(frames, 64, 64, 8, abort.signal)).rejects.toThrow(/aborted before ffmpeg started/);
    frames.destroy(new Error("frame generation stopped"));
    // An error event nobody listens for would surface here as an uncaught exception (vitest fails the run on it).
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(frames.destroyed).toBe(true);
  });

  it("an abort that comes after the call but before ffmpeg has started still stops it (nothing waits for ever on the input)", async () => {
    const frames = new PassThrough();
    const abort = new AbortController();
    const encoding = encodeVideoStream(frames, 64, 64, 8, abort.signal);
    abort.abort(new Error("shutting down"));
    frames.destroy(new Error("frame generation stopped"));
    await expect(encoding).rejects.toThrow(/killed|Input stream error/);
  }, 20_000);

  it("rejects input it cannot decode", async () => {
    await expect(decodeAudio(Buffer.from("this is not audio at all"), 16000)).rejects.toThrow();
  });
});
