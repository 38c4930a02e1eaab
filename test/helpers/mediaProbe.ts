import { spawnSync } from "node:child_process";
import { ffmpegPath, type MediaInfo, parseMediaReport } from "../../src/media/ffmpeg.js";

/**
 * What a test checks of media the node made: container, streams and duration, decoding the whole
 * input so a stream whose header leaves the length open still has one. Synchronous, for tests only
 * (the node itself never waits on ffmpeg with the event loop held).
 */
export function probeMedia(input: Buffer): MediaInfo {
  const result = spawnSync(ffmpegPath(), ["-hide_banner", "-i", "pipe:0", "-f", "null", "-"], { input, encoding: "latin1", maxBuffer: 64 * 1024 * 1024 });
  return parseMediaReport(result.stderr);
}

/** Counts decoded video frames (ffmpeg's last "frame=" progress line). */
export function countVideoFrames(input: Buffer): number {
  const result = spawnSync(ffmpegPath(), ["-hide_banner", "-i", "pipe:0", "-map", "0:v:0", "-f", "null", "-"], { input, encoding: "latin1", maxBuffer: 64 * 1024 * 1024 });
  const frames = [...result.stderr.matchAll(/frame=\s*(\d+)/g)];
  return frames.length ? Number(frames.at(-1)![1]) : 0;
}
