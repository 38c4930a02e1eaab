import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ffmpegPath } from "../../src/media/ffmpeg.js";

/**
 * The duration a file's own headers give, as a player or ffprobe reads it from a file on disk
 * (null when the container says N/A). Unlike probeMedia (mediaProbe.ts), nothing is decoded to find it.
 */
export function fileDurationSeconds(bytes: Buffer, extension: string): number | null {
  const dir = mkdtempSync(join(tmpdir(), "hearth-duration-"));
  try {
    const path = join(dir, `audio.${extension}`);
    writeFileSync(path, bytes);
    const report = spawnSync(ffmpegPath(), ["-hide_banner", "-i", path], { encoding: "latin1" }).stderr;
    const match = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(report);
    return match ? Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]) : null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
