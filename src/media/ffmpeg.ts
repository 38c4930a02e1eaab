import { copyInSlices } from "../engines/cooperativeWork.js";
import { WorkQueue } from "../engines/WorkQueue.js";
import { FfmpegError, runFfmpeg } from "./ffmpegProcess.js";
import { setFlacTotalSamples } from "./flac.js";
import { once } from "node:events";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import ffmpeg from "fluent-ffmpeg";

export { configureFfmpeg, FfmpegError, ffmpegPath, startFfmpegSpawner } from "./ffmpegProcess.js";

/**
 * What the node does with ffmpeg: decoding uploads, encoding speech and video, sampling video
 * frames. fluent-ffmpeg (no longer maintained upstream, so nothing else imports it) builds the
 * argument lists and ffmpegProcess.ts runs them: fluent-ffmpeg's own runner takes
 * child_process's spawn when it is loaded, so it could only start ffmpeg from this process.
 */

/** A command reading `source`: a file's path, else stdin. */
function command(source = "pipe:0"): ffmpeg.FfmpegCommand {
  return ffmpeg(source);
}

/** The arguments of a prepared command writing to `target`: a file's path, else stdout. */
function argumentsOf(cmd: ffmpeg.FfmpegCommand, target = "pipe:1"): string[] {
  cmd.output(target);
  // fluent-ffmpeg's own list (a private method), without its capability checks (each a run of
  // ffmpeg); every encoding test in ffmpeg.test.ts runs what it returns.
  return ["-hide_banner", ...(cmd as unknown as { _getArguments(): string[] })._getArguments()];
}

/**
 * An input as a stream. Its owner may destroy it with an error to stop ffmpeg (the video job,
 * when frame generation fails): before ffmpeg has started, nothing else listens for that error,
 * which would otherwise crash the process.
 */
function inputStream(input: Buffer | Readable): Readable {
  const stream = Buffer.isBuffer(input) ? Readable.from([input]) : input;
  stream.on("error", () => undefined);
  return stream;
}

/** Runs a command to completion, collecting its stdout. */
async function collect(args: string[], input: Buffer | Readable | undefined, signal?: AbortSignal): Promise<Buffer> {
  const chunks = await collectChunks(args, input, signal);
  // Joined in slices, not by Buffer.concat: an encoded 17-minute speech is 47 MB of FLAC.
  const out = Buffer.allocUnsafe(chunks.reduce((n, chunk) => n + chunk.length, 0));
  await copyInSlices(chunks, out, signal);
  return out;
}

/** Runs a command to completion; its stdout as the pieces it came in. */
async function collectChunks(args: string[], input: Buffer | Readable | undefined, signal?: AbortSignal): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  // The process can exit before its last stdout bytes are read: done once both happened.
  const outputFinished = once(output, "finish");
  outputFinished.catch(() => undefined); // an output error also fails the run, reported by runFfmpeg
  await runFfmpeg(args, { input: input && inputStream(input), output, signal });
  await outputFinished;
  return chunks;
}

/** Decodes any audio ffmpeg reads into mono float32 PCM at `sampleRate` (what speech models take). */
export async function decodeAudio(input: Buffer, sampleRate: number, signal?: AbortSignal, options: { maxSeconds?: number } = {}): Promise<Float32Array> {
  // From a scratch file, not a pipe: an M4A as phones and most recorders write it keeps its index
  // after the audio, which ffmpeg reaches only by seeking (from a pipe it decoded no samples).
  const chunks = await withScratchFile(input, signal, (path) => {
    const cmd = command(path).noVideo().audioChannels(1).audioFrequency(sampleRate).format("f32le");
    // Decoded no further than a second past the limit: a few MB of FLAC can hold hours of silence,
    // gigabytes of samples once decoded. What comes back longer than the limit is over it.
    if (options.maxSeconds !== undefined) cmd.duration(options.maxSeconds + 1);
    return collectChunks(argumentsOf(cmd), undefined, signal);
  });
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
  const encoded = collect(argumentsOf(pcmEncoding(command(), sampleRate, format, options)), input, signal);
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
  return runFfmpeg(["-y", ...argumentsOf(pcmEncoding(command(samplesPath), sampleRate, format, options), outputPath)], { signal }).then(() => undefined);
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
  const output = new PassThrough();
  const cmd = command()
    .inputFormat("f32le")
    .inputOptions(["-ar", String(sampleRate), "-ac", "1", "-probesize", "32", "-analyzeduration", "0", "-fflags", "nobuffer"])
    .audioCodec(spec.codec)
    .format(spec.muxer)
    .outputOptions(["-flush_packets", "1", ...(format === "opus" ? ["-page_duration", "100000"] : [])]);
  if (format === "opus") cmd.audioFrequency(48000);
  else if (options.outputSampleRate) cmd.audioFrequency(options.outputSampleRate);
  const stop = new AbortController();
  // A kill (client gone) also fails it; the caller decides whether that matters.
  const done = runFfmpeg(argumentsOf(cmd), { input, output, signal: stop.signal }).then(() => undefined);
  done.catch(() => {
    // ffmpeg that never started has no stdout to end the output with; one that did has ended it already.
    if (!output.readableEnded) output.destroy();
    input.destroy();
  });
  return {
    output,
    done,
    write: (samples) =>
      new Promise<void>((resolve) => {
        const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
        if (input.write(bytes)) resolve();
        else {
          // A destroyed input (ffmpeg failed or was killed) never drains: the writer is let go.
          input.once("drain", resolve);
          input.once("close", resolve);
        }
      }),
    end: () => input.end(),
    kill: () => {
      input.destroy();
      stop.abort();
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
    argumentsOf(
      command()
        .inputFormat("f32le")
        .inputOptions(["-ar", String(sampleRate), "-ac", "1"])
        .audioFilters(atempoChain(speed))
        .audioChannels(1)
        .audioFrequency(sampleRate)
        .format("f32le"),
    ),
    input,
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
  const cmd = command()
    .inputFormat("rawvideo")
    .inputOptions(["-pix_fmt", "rgb24", "-s", `${width}x${height}`, "-r", String(fps)])
    .videoCodec("libx264")
    // yuv420p for players; even dimensions are required by it; fragmented MP4 so it can stream to a pipe.
    .outputOptions(["-pix_fmt", "yuv420p", "-movflags", "frag_keyframe+empty_moov", "-preset", "veryfast"])
    .format("mp4");
  return collect(argumentsOf(cmd), frames, signal);
}

export interface MediaInfo {
  container: string;
  durationSeconds: number | null;
  /** width and height are as shown: swapped from the coded size where the stream says it is turned a quarter. */
  streams: { kind: "audio" | "video"; codec: string; sampleRate?: number; width?: number; height?: number }[];
}

/**
 * Container, duration and streams from what ffmpeg prints about its input (no ffprobe binary is
 * shipped on npm with ffmpeg; ffmpeg's own input report carries the same facts). Where the
 * header has no duration, the decoded time of the report's last progress line is taken.
 */
export function parseMediaReport(report: string): MediaInfo {
  // e.g. "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'pipe:0':"
  const container = /Input #0, (.+?), from/.exec(report)?.[1] ?? "unknown";
  // Streams are read from the input's description only (an output's streams are listed the same way).
  const input = report.split(/^(?:Output #0|Stream mapping:)/m)[0]!;
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(report);
  const last = duration ?? [...report.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)].at(-1);
  const durationSeconds = last ? Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]) : null;
  const streams: MediaInfo["streams"] = [];
  // Each stream's line and the metadata lines under it, up to the next stream.
  for (const match of input.matchAll(/Stream #0:\d+[^:]*: (Audio|Video): ([^,\s]+)([^\n]*(?:\n(?! *Stream #)[^\n]*)*)/g)) {
    const rest = match[3] ?? "";
    if (match[1] === "Audio") streams.push({ kind: "audio", codec: match[2]!, sampleRate: Number(/(\d+) Hz/.exec(rest)?.[1]) || undefined });
    else {
      const size = /(\d{2,5})x(\d{2,5})/.exec(rest);
      // A phone's portrait video is coded landscape with "rotate: 90" (older ffmpeg) or a display matrix's "rotation of -90.00 degrees".
      const rotation = Number(/rotate\s*:\s*(-?\d+)/.exec(rest)?.[1] ?? /rotation of (-?[\d.]+) degrees/.exec(rest)?.[1] ?? 0);
      const quarterTurned = Math.abs(Math.round(rotation / 90)) % 2 === 1;
      const [width, height] = size ? [Number(size[1]), Number(size[2])] : [undefined, undefined];
      streams.push({ kind: "video", codec: match[2]!, width: quarterTurned ? height : width, height: quarterTurned ? width : height });
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
export async function probeContainer(input: Buffer): Promise<{ container: string | undefined; hasAudio: boolean }> {
  // ffmpeg stops reading once it knows the input; with no output named it then exits (status 1).
  const report = await runFfmpeg(["-hide_banner", "-nostdin", "-i", "pipe:0"], { input: inputStream(input), anyExitCode: true });
  const container = /Input #0, (.+?), from/.exec(report)?.[1];
  return { container, hasAudio: /Stream #0:\d+[^:]*: Audio:/.test(report) };
}

/** A media file's container, duration and streams as its headers give them: nothing is decoded. */
export async function readMediaHeader(path: string, signal?: AbortSignal): Promise<MediaInfo> {
  // With no output named, ffmpeg describes the input and exits (status 1, "At least one output file must be specified").
  return parseMediaReport(await runFfmpeg(["-hide_banner", "-nostdin", "-i", path], { signal, anyExitCode: true }));
}

/** A video's length found by decoding it (for containers whose header has none, e.g. a recorder's WebM); null when nothing decodes. */
async function decodedVideoSeconds(path: string, signal?: AbortSignal): Promise<number | null> {
  // One decoding thread: a caller's video of hours costs one core until the deadline, not all of them.
  const report = await runFfmpeg(["-hide_banner", "-nostdin", "-threads", "1", "-i", path, "-map", "0:v:0", "-f", "null", "-"], { signal, anyExitCode: true });
  const last = [...report.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)].at(-1);
  return last ? Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]) : null;
}

export type SampledFrames = { frames: { rgb: Uint8Array; width: number; height: number }[]; times: number[]; duration: number };

/**
 * `count` frames sampled evenly over a video (the first at its start), scaled to fit a `maxSide`
 * square (aspect kept, even sides), as interleaved RGB, with each frame's time. Throws
 * FfmpegError where ffmpeg cannot read the input or it has no video stream.
 *
 * The video is written to a scratch file, not piped: an MP4 as cameras and phones write it keeps
 * its index at the end, which ffmpeg can only reach by seeking. Each frame is then read by seeking
 * to its time (decoding from the keyframe before it), so the work follows the number of frames,
 * not the video's length: a few hundred kilobytes can hold an hour of video. Where the header
 * gives no duration, the video is decoded once to find it; the caller's deadline bounds that.
 */
export async function sampleVideoFrames(input: Buffer, count: number, maxSide: number, signal?: AbortSignal): Promise<SampledFrames> {
  return VIDEO_SAMPLING.run(() => sampleFromFile(input, count, maxSide, signal), signal);
}

/**
 * Videos sampled at once, a core each at most (one decoding thread per input): a burst of
 * hostile videos of hours (whose length must be decoded to be known) takes this many cores
 * until their deadlines, and the node keeps the others. The rest wait their turn (past 32
 * waiting, a 503).
 */
export const VIDEO_SAMPLINGS_AT_ONCE = Math.max(1, Math.floor(availableParallelism() / 2));
export const VIDEO_SAMPLING = new WorkQueue("video sampling", 32, VIDEO_SAMPLINGS_AT_ONCE);

async function sampleFromFile(input: Buffer, count: number, maxSide: number, signal?: AbortSignal): Promise<SampledFrames> {
  return withScratchFile(input, signal, async (path, dir) => {
    const info = await readMediaHeader(path, signal);
    const video = info.streams.find((s) => s.kind === "video");
    if (!video?.width || !video.height) throw new FfmpegError("no video stream", "");
    const duration = (info.durationSeconds || (await decodedVideoSeconds(path, signal))) ?? 0;
    const scale = Math.min(1, maxSide / Math.max(video.width, video.height));
    const even = (n: number) => Math.max(2, Math.round((n * scale) / 2) * 2);
    const frame = { width: even(video.width), height: even(video.height), dir, path };
    const times = Array.from({ length: count }, (_, i) => (i * duration) / count);
    let sampled = await framesBySeeking(frame, times, signal);
    // A stream without an index (raw H.264) cannot be sought in at all: then one pass decodes it
    // (on one thread, within the deadline), keeping the frames at those times.
    if (sampled.frames.length < count) {
      const decoded = await framesByDecoding(frame, times, duration, signal);
      if (decoded.frames.length > sampled.frames.length) sampled = decoded;
    }
    if (sampled.frames.length === 0) throw new FfmpegError("no frame could be decoded", sampled.report);
    return { frames: sampled.frames, times: sampled.times, duration: duration || 1 };
  });
}

interface FrameShape {
  width: number;
  height: number;
  /** The scratch directory, for the frames' files. */
  dir: string;
  /** The video's scratch file. */
  path: string;
}

type FrameRun = { frames: SampledFrames["frames"]; times: number[]; report: string };

/** One ffmpeg for all frames: each input seeks to its time (decoding from the keyframe before it), each output takes one frame of it. */
async function framesBySeeking(shape: FrameShape, times: number[], signal?: AbortSignal): Promise<FrameRun> {
  const frameFile = (i: number) => join(shape.dir, `frame-${i}.rgb`);
  const args = [
    "-hide_banner",
    "-nostdin",
    "-loglevel",
    "error",
    ...times.flatMap((time) => ["-threads", "1", "-ss", time.toFixed(3), "-i", shape.path]),
    ...times.flatMap((_, i) => ["-map", `${i}:v:0`, "-frames:v", "1", "-vf", `scale=${shape.width}:${shape.height}`, "-pix_fmt", "rgb24", "-f", "rawvideo", frameFile(i)]),
  ];
  const report = await runFfmpeg(args, { signal });
  const size = shape.width * shape.height * 3;
  const run: FrameRun = { frames: [], times: [], report };
  for (const [i, time] of times.entries()) {
    // A seek past the last frame (a header's duration longer than its video) writes nothing.
    const rgb = await readFile(frameFile(i)).catch(() => Buffer.alloc(0));
    if (rgb.byteLength < size) continue;
    run.frames.push({ rgb: new Uint8Array(rgb.buffer, rgb.byteOffset, size), width: shape.width, height: shape.height });
    run.times.push(time);
  }
  return run;
}

/**
 * One pass over the whole video, keeping its first frame and then the first at least an
 * interval (`duration` / `times.length`) after the last kept one: the frames at about those times.
 */
async function framesByDecoding(shape: FrameShape, times: number[], duration: number, signal?: AbortSignal): Promise<FrameRun> {
  const file = join(shape.dir, "frames.rgb");
  const interval = (duration || 1) / times.length;
  const filters = `select='isnan(prev_selected_t)+gte(t-prev_selected_t\\,${interval.toFixed(3)})',scale=${shape.width}:${shape.height}`;
  // Passthrough: each kept frame once (a constant frame rate would repeat it to fill the gaps).
  const args = ["-hide_banner", "-nostdin", "-loglevel", "error", "-threads", "1", "-i", shape.path, "-map", "0:v:0", "-vf", filters, "-vsync", "passthrough"];
  args.push("-frames:v", String(times.length), "-pix_fmt", "rgb24", "-f", "rawvideo", file);
  const report = await runFfmpeg(args, { signal });
  const raw = await readFile(file).catch(() => Buffer.alloc(0));
  const size = shape.width * shape.height * 3;
  const run: FrameRun = { frames: [], times: [], report };
  for (let offset = 0, i = 0; offset + size <= raw.byteLength && i < times.length; offset += size, i++) {
    run.frames.push({ rgb: new Uint8Array(raw.buffer, raw.byteOffset + offset, size), width: shape.width, height: shape.height });
    run.times.push(times[i]!);
  }
  return run;
}

/**
 * Runs `work` on `input` written to a file of its own (in a fresh directory that `work` may also
 * write to), for ffmpeg to seek in; the directory is removed after.
 */
async function withScratchFile<T>(input: Buffer, signal: AbortSignal | undefined, work: (path: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "hearth-media-"));
  try {
    const path = join(dir, "input");
    await writeFile(path, input, { signal });
    return await work(path, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
