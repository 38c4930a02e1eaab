import { copyInSlices } from "../engines/cooperativeWork.js";
import { setFlacTotalSamples } from "./flac.js";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { PassThrough, Readable } from "node:stream";
import ffmpeg from "fluent-ffmpeg";

/**
 * The one module that runs ffmpeg (through fluent-ffmpeg, which is no longer maintained
 * upstream, so nothing else imports it). Which binary: an explicit path (HEARTH_FFMPEG),
 * else an `ffmpeg` on PATH (usually newer), else the static build shipped inside the npm
 * package @ffmpeg-installer/ffmpeg, so `npm install` alone gives a working ffmpeg.
 */

let resolved: string | undefined;

export function configureFfmpeg(explicitPath?: string): string {
  resolved = explicitPath || onPath() || ffmpegInstaller.path;
  return resolved;
}

export function ffmpegPath(): string {
  return resolved ?? configureFfmpeg();
}

function onPath(): string | undefined {
  const probe = spawnSync("ffmpeg", ["-hide_banner", "-version"], { encoding: "utf8" });
  return probe.status === 0 ? "ffmpeg" : undefined;
}

function command(input: Buffer | Readable) {
  const source = Buffer.isBuffer(input) ? Readable.from([input]) : input;
  // fluent-ffmpeg listens for an input stream's errors only while ffmpeg runs. A stream's owner
  // destroys it with an error to stop ffmpeg (the video job, when frame generation fails): if an
  // abort came before ffmpeg started, that error had no listener and crashed the process.
  source.on("error", () => undefined);
  return ffmpeg(source).setFfmpegPath(ffmpegPath());
}

/**
 * Where ffmpeg's stdout goes. It never emits "close": fluent-ffmpeg treats a closed output as
 * "kill ffmpeg in 20 ms and fail with 'Output stream closed'" unless the process has exited by
 * then, which under load (a busy 2-core machine) it often has not, though it succeeded. Without
 * "close", success or failure comes from the process's own exit status.
 */
function ffmpegOutput(): PassThrough {
  return new PassThrough({ emitClose: false });
}

/** Runs a prepared command to completion, collecting its stdout. */
async function collect(cmd: ffmpeg.FfmpegCommand, signal?: AbortSignal): Promise<Buffer> {
  const chunks = await collectChunks(cmd, signal);
  // Joined in slices, not by Buffer.concat: an encoded 17-minute speech is 47 MB of FLAC.
  const out = Buffer.allocUnsafe(chunks.reduce((n, chunk) => n + chunk.length, 0));
  await copyInSlices(chunks, out, signal);
  return out;
}

/** Runs a prepared command to completion; its stdout as the pieces it came in. */
async function collectChunks(cmd: ffmpeg.FfmpegCommand, signal?: AbortSignal): Promise<Buffer[]> {
  const out = ffmpegOutput();
  const chunks: Buffer[] = [];
  out.on("data", (chunk: Buffer) => chunks.push(chunk));
  // The process can exit before its last stdout bytes are read: done once both happened.
  const outputEnded = once(out, "end");
  outputEnded.catch(() => undefined); // an output error also fails the command, reported by run()
  await run(cmd, signal, () => cmd.pipe(out, { end: true }));
  await outputEnded;
  return chunks;
}

/**
 * Runs a prepared command until ffmpeg exits (`start` sets its output going); an abort kills it.
 * Fails with an FfmpegError, before starting when the signal is already aborted.
 */
function run(cmd: ffmpeg.FfmpegCommand, signal: AbortSignal | undefined, start: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    // An abort that came before the listener below would never fire: do not start at all.
    if (signal?.aborted) {
      reject(new FfmpegError("aborted before ffmpeg started", ""));
      return;
    }
    const onAbort = () => cmd.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    cmd
      // fluent-ffmpeg starts ffmpeg asynchronously, and killing before that does nothing: an abort
      // that came in between left ffmpeg waiting on its input for ever (a video job stopped at
      // shutdown held the shutdown). Such an ffmpeg is killed as it starts.
      .on("start", () => {
        if (signal?.aborted) cmd.kill("SIGKILL");
      })
      .on("error", (error: Error, _stdout: string | null, stderr: string | null) => {
        signal?.removeEventListener("abort", onAbort);
        reject(new FfmpegError(error.message, stderr ?? ""));
      })
      .on("end", () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    start();
  });
}

export class FfmpegError extends Error {
  override name = "FfmpegError";
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** Decodes any audio ffmpeg reads into mono float32 PCM at `sampleRate` (what speech models take). */
export async function decodeAudio(input: Buffer, sampleRate: number, signal?: AbortSignal, options: { maxSeconds?: number } = {}): Promise<Float32Array> {
  const cmd = command(input).noVideo().audioChannels(1).audioFrequency(sampleRate).format("f32le");
  // Decoded no further than a second past the limit: a few MB of FLAC can hold hours of silence,
  // gigabytes of samples once decoded. What comes back longer than the limit is over it.
  if (options.maxSeconds !== undefined) cmd.duration(options.maxSeconds + 1);
  const chunks = await collectChunks(cmd, signal);
  // Copied straight into an array of its own (no concatenated Buffer in between: one copy of
  // what may be hundreds of MB), which owns its whole ArrayBuffer and so can be transferred
  // to a worker thread (a Buffer's may be Node's shared pool).
  // In slices: 700 s of audio are 45 MB of samples.
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const samples = new Float32Array(Math.floor(total / 4));
  await copyInSlices(chunks, new Uint8Array(samples.buffer), signal);
  return samples;
}

export const AUDIO_FORMATS = {
  mp3: { contentType: "audio/mpeg", muxer: "mp3", codec: "libmp3lame" },
  opus: { contentType: "audio/ogg", muxer: "ogg", codec: "libopus" },
  aac: { contentType: "audio/aac", muxer: "adts", codec: "aac" },
  flac: { contentType: "audio/flac", muxer: "flac", codec: "flac" },
  wav: { contentType: "audio/wav", muxer: "wav", codec: "pcm_s16le" },
  pcm: { contentType: "audio/pcm", muxer: "s16le", codec: "pcm_s16le" },
} as const;
export type AudioFormat = keyof typeof AUDIO_FORMATS;

/** Encodes mono float32 PCM into one of the speech formats (pcm is raw 16-bit little-endian). */
export function encodeAudio(
  samples: Float32Array | readonly Float32Array[],
  sampleRate: number,
  format: AudioFormat,
  signal?: AbortSignal,
  options: { outputSampleRate?: number } = {},
): Promise<Buffer> {
  // Consecutive chunks go to ffmpeg one after another, never concatenated first (a long speech
  // is 100 MB of float samples).
  const parts = samples instanceof Float32Array ? [samples] : samples;
  const input = Readable.from(parts.map((part) => Buffer.from(part.buffer, part.byteOffset, part.byteLength)));
  const totalSamples = parts.reduce((n, part) => n + part.length, 0);
  const encoded = collect(pcmEncoding(command(input), sampleRate, format, options), signal);
  return format === "flac" ? encoded.then((flac) => setFlacTotalSamples(flac, totalSamples, sampleRate)) : encoded;
}

/**
 * Encodes a file of mono float32 PCM (raw f32le at `sampleRate`) into `outputPath` in one of the
 * speech formats. ffmpeg writes the file itself and seeks back to finish the headers that carry
 * the length (FLAC's STREAMINFO, WAV's sizes, MP3's Xing frame count), so neither the samples
 * nor the encoded audio are held in memory, whatever their length.
 */
export function encodeAudioFile(
  samplesPath: string,
  sampleRate: number,
  format: AudioFormat,
  outputPath: string,
  signal?: AbortSignal,
  options: { outputSampleRate?: number } = {},
): Promise<void> {
  const cmd = pcmEncoding(ffmpeg(samplesPath).setFfmpegPath(ffmpegPath()), sampleRate, format, options);
  return run(cmd, signal, () => cmd.save(outputPath));
}

/** A command reading mono float32 PCM at `sampleRate` set to encode it in `format`. */
function pcmEncoding(cmd: ffmpeg.FfmpegCommand, sampleRate: number, format: AudioFormat, options: { outputSampleRate?: number }): ffmpeg.FfmpegCommand {
  const spec = AUDIO_FORMATS[format];
  cmd
    .inputFormat("f32le")
    .inputOptions(["-ar", String(sampleRate), "-ac", "1"])
    .audioCodec(spec.codec)
    .format(spec.muxer);
  // Opus only runs at 48/24/16/12/8 kHz; let ffmpeg resample to 48 kHz there.
  if (format === "opus") cmd.audioFrequency(48000);
  else if (options.outputSampleRate) cmd.audioFrequency(options.outputSampleRate);
  return cmd;
}

/**
 * Encoding while the audio is still being made: one ffmpeg process per stream, fed float32
 * PCM piece by piece on stdin, its stdout read as ffmpeg writes it. Input probing is off and
 * every packet is flushed, so encoded bytes leave as soon as the encoder has a frame. Every
 * format is written in a container that needs no seeking back: MP3 frames, ADTS AAC frames,
 * Ogg pages (100 ms each) for Opus, FLAC frames after a STREAMINFO whose total length is left
 * unknown, WAV with its size fields at their maximum, raw PCM.
 */
export interface AudioEncoderStream {
  /** Queues samples; resolves when ffmpeg has taken them (backpressure). */
  write(samples: Float32Array): Promise<void>;
  /** No more input: ffmpeg flushes and `output` ends. */
  end(): void;
  /** Stops ffmpeg at once (client gone). */
  kill(): void;
  readonly output: Readable;
  /** Settles when ffmpeg exits; rejects with an FfmpegError on failure. */
  readonly done: Promise<void>;
}

export function createAudioEncoderStream(sampleRate: number, format: AudioFormat, options: { outputSampleRate?: number } = {}): AudioEncoderStream {
  const spec = AUDIO_FORMATS[format];
  const input = new PassThrough();
  const output = ffmpegOutput();
  const cmd = ffmpeg(input)
    .setFfmpegPath(ffmpegPath())
    .inputFormat("f32le")
    .inputOptions(["-ar", String(sampleRate), "-ac", "1", "-probesize", "32", "-analyzeduration", "0", "-fflags", "nobuffer"])
    .audioCodec(spec.codec)
    .format(spec.muxer)
    .outputOptions(["-flush_packets", "1", ...(format === "opus" ? ["-page_duration", "100000"] : [])]);
  if (format === "opus") cmd.audioFrequency(48000);
  else if (options.outputSampleRate) cmd.audioFrequency(options.outputSampleRate);
  const done = new Promise<void>((resolve, reject) => {
    cmd
      .on("error", (error: Error, _stdout: string | null, stderr: string | null) => {
        // A kill (client gone) also lands here; the caller decides whether that matters.
        output.end();
        reject(new FfmpegError(error.message, stderr ?? ""));
      })
      .on("end", () => resolve());
  });
  // Handled by whoever awaits `done`; never an unhandled rejection when nobody does.
  done.catch(() => undefined);
  cmd.pipe(output, { end: true });
  return {
    output,
    done,
    write: (samples) =>
      new Promise<void>((resolve) => {
        const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
        if (input.write(bytes)) resolve();
        else input.once("drain", resolve);
      }),
    end: () => input.end(),
    kill: () => {
      input.destroy();
      cmd.kill("SIGKILL");
    },
  };
}

/** atempo takes factors from 0.5 to 2: chain as many as needed (0.25 = 0.5 x 0.5, 4 = 2 x 2). */
export function atempoChain(speed: number): string {
  const factors: number[] = [];
  let rest = speed;
  while (rest > 2) {
    factors.push(2);
    rest /= 2;
  }
  while (rest < 0.5) {
    factors.push(0.5);
    rest /= 0.5;
  }
  factors.push(rest);
  return factors.map((f) => `atempo=${Number(f.toFixed(6))}`).join(",");
}

/** Changes tempo without changing pitch (for engines whose model has no speed input). */
export async function stretchAudio(samples: Float32Array, sampleRate: number, speed: number, signal?: AbortSignal): Promise<Float32Array> {
  if (speed === 1 || samples.length === 0) return samples;
  const input = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const raw = await collect(
    command(input)
      .inputFormat("f32le")
      .inputOptions(["-ar", String(sampleRate), "-ac", "1"])
      .audioFilters(atempoChain(speed))
      .audioChannels(1)
      .audioFrequency(sampleRate)
      .format("f32le"),
    signal,
  );
  return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength - (raw.byteLength % 4)));
}

/** Encodes raw RGB24 frames (all `width`x`height`) into an H.264 MP4. */
export function encodeVideo(frames: readonly Buffer[], width: number, height: number, fps: number, signal?: AbortSignal): Promise<Buffer> {
  return encodeVideoStream(Buffer.concat(frames), width, height, fps, signal);
}

/**
 * Same, from a stream of raw RGB24 frames (written as they are generated, so a long video is
 * never held in memory as raw frames); resolves once the stream ends and ffmpeg finishes.
 */
export function encodeVideoStream(frames: Buffer | Readable, width: number, height: number, fps: number, signal?: AbortSignal): Promise<Buffer> {
  const cmd = command(frames)
    .inputFormat("rawvideo")
    .inputOptions(["-pix_fmt", "rgb24", "-s", `${width}x${height}`, "-r", String(fps)])
    .videoCodec("libx264")
    // yuv420p for players; even dimensions are required by it; fragmented MP4 so it can stream to a pipe.
    .outputOptions(["-pix_fmt", "yuv420p", "-movflags", "frag_keyframe+empty_moov", "-preset", "veryfast"])
    .format("mp4");
  return collect(cmd, signal);
}

export interface MediaInfo {
  container: string;
  durationSeconds: number | null;
  streams: { kind: "audio" | "video"; codec: string; sampleRate?: number; width?: number; height?: number }[];
}

/**
 * Reads container, duration and streams from what ffmpeg prints about its input (no ffprobe
 * binary is shipped on npm with ffmpeg; ffmpeg's own input report carries the same facts).
 */
export function probeMedia(input: Buffer): MediaInfo {
  const result = spawnSync(ffmpegPath(), ["-hide_banner", "-i", "pipe:0", "-f", "null", "-"], { input, encoding: "latin1", maxBuffer: 64 * 1024 * 1024 });
  const report = result.stderr;
  // e.g. "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'pipe:0':"
  const container = /Input #0, (.+?), from/.exec(report)?.[1] ?? "unknown";
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(report);
  // Piped inputs often report N/A; the decoded time of the last progress line is then the duration.
  const decodedTimes = [...report.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)];
  const last = duration ?? decodedTimes.at(-1);
  const durationSeconds = last ? Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]) : null;
  const streams: MediaInfo["streams"] = [];
  for (const match of report.matchAll(/Stream #0:\d+[^:]*: (Audio|Video): ([^,\s]+)([^\n]*)/g)) {
    const rest = match[3] ?? "";
    if (match[1] === "Audio") streams.push({ kind: "audio", codec: match[2]!, sampleRate: Number(/(\d+) Hz/.exec(rest)?.[1]) || undefined });
    else {
      const size = /(\d{2,5})x(\d{2,5})/.exec(rest);
      streams.push({ kind: "video", codec: match[2]!, width: size ? Number(size[1]) : undefined, height: size ? Number(size[2]) : undefined });
    }
  }
  return { container, durationSeconds, streams };
}

/**
 * The container ffmpeg detects in an input and whether it holds audio, without decoding it
 * (asynchronous: uploads can be large). `container` is ffmpeg's demuxer list, e.g. "wav",
 * "mp3", "ogg", "flac", "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "aac"; undefined when
 * ffmpeg does not recognise the input.
 */
export function probeContainer(input: Buffer): Promise<{ container: string | undefined; hasAudio: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ["-hide_banner", "-nostdin", "-i", "pipe:0"], { stdio: ["pipe", "ignore", "pipe"] });
    let report = "";
    child.stderr.setEncoding("latin1");
    child.stderr.on("data", (chunk: string) => (report += chunk));
    // ffmpeg stops reading once it knows the input: the rest of the write fails with EPIPE, which is expected.
    child.stdin.on("error", () => undefined);
    child.stdin.end(input);
    child.on("error", reject);
    child.on("close", () => {
      const container = /Input #0, (.+?), from/.exec(report)?.[1];
      resolve({ container, hasAudio: /Stream #0:\d+[^:]*: Audio:/.test(report) });
    });
  });
}

/** Counts decoded video frames (ffmpeg's last "frame=" progress line). */
export function countVideoFrames(input: Buffer): number {
  const result = spawnSync(ffmpegPath(), ["-hide_banner", "-i", "pipe:0", "-map", "0:v:0", "-f", "null", "-"], { input, encoding: "latin1", maxBuffer: 64 * 1024 * 1024 });
  const frames = [...result.stderr.matchAll(/frame=\s*(\d+)/g)];
  return frames.length ? Number(frames.at(-1)![1]) : 0;
}

/**
 * `count` frames sampled evenly over a video, scaled to fit a `maxSide` square (aspect kept, even
 * sides), as interleaved RGB, with each frame's time. Throws FfmpegError where ffmpeg cannot
 * read the input or it has no video stream.
 */
export async function sampleVideoFrames(
  input: Buffer,
  count: number,
  maxSide: number,
  signal?: AbortSignal,
): Promise<{ frames: { rgb: Uint8Array; width: number; height: number }[]; times: number[]; duration: number }> {
  const info = probeMedia(input);
  const video = info.streams.find((s) => s.kind === "video");
  if (!video?.width || !video.height) throw new FfmpegError("no video stream", "");
  const duration = info.durationSeconds && info.durationSeconds > 0 ? info.durationSeconds : 1;
  const scale = Math.min(1, maxSide / Math.max(video.width, video.height));
  const even = (n: number) => Math.max(2, Math.round((n * scale) / 2) * 2);
  const [width, height] = [even(video.width), even(video.height)];
  const cmd = command(input)
    .noAudio()
    .videoFilters([`fps=${count / duration}`, `scale=${width}:${height}`])
    .outputOptions(["-pix_fmt", "rgb24", "-frames:v", String(count)])
    .format("rawvideo");
  const raw = await collect(cmd, signal);
  const size = width * height * 3;
  const frames = [];
  for (let offset = 0; offset + size <= raw.byteLength; offset += size) frames.push({ rgb: new Uint8Array(raw.buffer, raw.byteOffset + offset, size), width, height });
  if (frames.length === 0) throw new FfmpegError("no frame could be decoded", "");
  return { frames, times: frames.map((_, i) => (i * duration) / count), duration };
}
