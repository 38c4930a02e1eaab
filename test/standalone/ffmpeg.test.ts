import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  AUDIO_FORMATS,
  configureFfmpeg,
  createAudioEncoderStream,
  decodeAudio,
  encodeAudio,
  encodeVideo,
  encodeVideoStream,
  FfmpegError,
  ffmpegPath,
  parseMediaReport,
  sampleVideoFrames,
  VIDEO_SAMPLING,
  VIDEO_SAMPLINGS_AT_ONCE,
  type AudioFormat,
} from "../../src/media/ffmpeg.js";
import { countVideoFrames, probeMedia } from "../helpers/mediaProbe.js";

const tone = (seconds: number, rate: number) => Float32Array.from({ length: seconds * rate }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate));

/** Runs `work` with ffmpeg replaced by a shell script around the real binary (`body` gets its path). */
async function withFfmpegWrapper<T>(body: (real: string) => string, work: () => Promise<T>): Promise<T> {
  const real = ffmpegPath();
  const dir = mkdtempSync(join(tmpdir(), "hearth-ffmpeg-wrapper-"));
  const wrapper = join(dir, "ffmpeg");
  writeFileSync(wrapper, `#!/bin/sh\n${body(real)}\n`);
  chmodSync(wrapper, 0o755);
  configureFfmpeg(wrapper);
  try {
    return await work();
  } finally {
    configureFfmpeg(real);
    rmSync(dir, { recursive: true, force: true });
  }
}

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
    await withFfmpegWrapper(
      (real) => `"${real}" "$@"\nstatus=$?\nexec 1>&-\nsleep 0.3\nexit $status`,
      async () => {
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
      },
    );
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

/** Writes a video with ffmpeg's own test sources: 64×48, 10 fps, `seconds` long, each frame as bright as 6 × its time (0 to 240). */
function brightnessRamp(seconds: number, format: "mp4" | "matroska" | "h264"): Buffer {
  const source = `color=c=black:s=64x48:r=10:d=${seconds},format=rgb24,geq=r='T*6':g='T*6':b='T*6'`;
  const dir = mkdtempSync(join(tmpdir(), "hearth-ramp-"));
  try {
    // A file for MP4 (its index written last, after the frames, as cameras do); a pipe for Matroska (no duration in its header) and raw H.264 (no container at all).
    const out = format === "mp4" ? join(dir, "ramp.mp4") : "pipe:1";
    const result = spawnSync(
      ffmpegPath(),
      ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", source, "-c:v", "libx264", "-g", "50", "-pix_fmt", "yuv420p", "-f", format, "-y", out],
      {
        maxBuffer: 64 << 20,
      },
    );
    if (result.status !== 0) throw new Error(String(result.stderr));
    return format === "mp4" ? readFileSync(out) : result.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const meanValue = (rgb: Uint8Array) => rgb.reduce((sum, value) => sum + value, 0) / rgb.length;

describe("video frames for vision models", () => {
  it("samples an MP4 whose index comes after its frames (as cameras write it), each frame the one at its time", async () => {
    const mp4 = brightnessRamp(40, "mp4");
    expect(mp4.indexOf("moov")).toBeGreaterThan(mp4.indexOf("mdat"));
    const sampled = await sampleVideoFrames(mp4, 4, 384);
    expect(sampled.duration).toBeCloseTo(40, 0);
    expect(sampled.times).toEqual([0, 10, 20, 30]);
    expect(sampled.frames.map((frame) => [frame.width, frame.height])).toEqual(Array(4).fill([64, 48]));
    expect(sampled.frames.map((frame) => meanValue(frame.rgb))).toEqual(sampled.times.map((time) => expect.closeTo(6 * time, -1)));
  });

  it("finds the length of a video whose header has none by decoding it, and samples over all of it", async () => {
    const mkv = brightnessRamp(20, "matroska");
    const sampled = await sampleVideoFrames(mkv, 2, 32);
    expect(sampled.duration).toBeCloseTo(20, 0);
    expect(sampled.frames.map((frame) => [frame.width, frame.height])).toEqual(Array(2).fill([32, 24]));
    expect(meanValue(sampled.frames[1]!.rgb)).toBeCloseTo(60, -1);
  });

  it("samples a raw H.264 stream (no index to seek in, no length) in one pass, each frame about the one at its time", async () => {
    const raw = brightnessRamp(40, "h264");
    const sampled = await sampleVideoFrames(raw, 4, 384);
    expect(sampled.frames).toHaveLength(4);
    expect(sampled.duration).toBeGreaterThan(30);
    // Brightness is 6 × the frame's own time; a raw stream's times are estimated from its frame rate.
    const brightness = sampled.frames.map((frame) => meanValue(frame.rgb));
    expect(brightness[0]).toBeLessThan(5);
    for (let i = 1; i < 4; i++) expect(Math.abs(brightness[i]! - 6 * sampled.times[i]!)).toBeLessThan(15);
  });

  it("refuses what is not a video with an FfmpegError", async () => {
    await expect(sampleVideoFrames(Buffer.from("AAAAAAAA"), 4, 384)).rejects.toThrow(FfmpegError);
    await expect(sampleVideoFrames(await encodeAudio(tone(1, 24000), 24000, "mp3"), 4, 384)).rejects.toThrow(/no video stream/);
  });

  it("keeps the event loop turning while ffmpeg reads the video (it held it for as long as ffmpeg ran: seconds for a small file of a long video)", async () => {
    // The real ffmpeg behind a shell that first sleeps a second: a waiting caller sees that second pass.
    const mp4 = brightnessRamp(2, "mp4");
    let longestGap = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      longestGap = Math.max(longestGap, performance.now() - last);
      last = performance.now();
    }, 10);
    try {
      const sampled = await withFfmpegWrapper(
        (real) => `sleep 1\nexec "${real}" "$@"`,
        () => sampleVideoFrames(mp4, 2, 64),
      );
      expect(sampled.frames).toHaveLength(2);
      expect(longestGap).toBeLessThan(500);
    } finally {
      clearInterval(ticker);
    }
  });

  it("samples at most VIDEO_SAMPLINGS_AT_ONCE videos at once; the next waits its turn", async () => {
    const mp4 = brightnessRamp(2, "mp4");
    await withFfmpegWrapper(
      (real) => `sleep 0.3\nexec "${real}" "$@"`,
      async () => {
        const runs = Array.from({ length: VIDEO_SAMPLINGS_AT_ONCE + 1 }, () => sampleVideoFrames(mp4, 1, 32));
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(VIDEO_SAMPLING.stats()).toEqual({ busy: VIDEO_SAMPLINGS_AT_ONCE, waiting: 1 });
        for (const sampled of await Promise.all(runs)) expect(sampled.frames).toHaveLength(1);
        expect(VIDEO_SAMPLING.stats()).toEqual({ busy: 0, waiting: 0 });
      },
    );
  });

  it("reads the shown size of a portrait video from either way ffmpeg reports a quarter turn", () => {
    const report = (rotation: string) =>
      `Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'input':\n  Duration: 00:00:05.00, start: 0.000000, bitrate: 900 kb/s\n    Stream #0:0(und): Video: h264 (High) (avc1 / 0x31637661), yuv420p, 1920x1080, 800 kb/s, 30 fps (default)\n${rotation}    Stream #0:1(und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, mono, fltp, 96 kb/s (default)\nAt least one output file must be specified\n`;
    const older = parseMediaReport(report("    Metadata:\n      rotate          : 90\n"));
    const newer = parseMediaReport(report("    Side data:\n      displaymatrix: rotation of -90.00 degrees\n"));
    const upright = parseMediaReport(report(""));
    for (const info of [older, newer]) expect(info.streams[0]).toMatchObject({ kind: "video", width: 1080, height: 1920 });
    expect(upright.streams[0]).toMatchObject({ width: 1920, height: 1080 });
    expect(upright.streams[1]).toMatchObject({ kind: "audio", sampleRate: 44100 });
    expect(upright.durationSeconds).toBe(5);
  });
});

describe("audio from phones and recorders", () => {
  it("decodes an M4A whose index comes after its audio (from a pipe, ffmpeg decoded no samples of it)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hearth-m4a-"));
    try {
      const path = join(dir, "memo.m4a");
      const made = spawnSync(ffmpegPath(), ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "sine=f=440:d=5", "-c:a", "aac", "-y", path]);
      expect(made.status).toBe(0);
      const m4a = readFileSync(path);
      expect(m4a.indexOf("moov")).toBeGreaterThan(m4a.indexOf("mdat"));
      const samples = await decodeAudio(m4a, 16000);
      expect(samples.length / 16000).toBeCloseTo(5, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
