import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { spawnSync } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { ProcessSpawner, type StartedProcess, type StdioWanted, spawnHere } from "./processSpawner.js";

/**
 * Running ffmpeg: which binary, and one run of it with its input, output and report. Which
 * binary: an explicit path (HEARTH_FFMPEG), else an `ffmpeg` on PATH (usually newer), else the
 * static build shipped inside the npm package @ffmpeg-installer/ffmpeg, so `npm install` alone
 * gives a working ffmpeg. Runs start from the process spawner once it is up (processSpawner.ts),
 * so a node holding gigabytes of models never forks for them.
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

export class FfmpegError extends Error {
  override name = "FfmpegError";
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

let spawner: ProcessSpawner | undefined;
let spawnerStart: Promise<SpawnerState> | undefined;

export type SpawnerState = { started: true } | { started: false; reason: string };

/**
 * Starts the process spawner for this process's ffmpeg runs (once; later calls get the same
 * answer). The node calls it at start, while it is small; a process that never did starts it at
 * its first run. Where it cannot start, runs start from this process as before.
 */
export function startFfmpegSpawner(): Promise<SpawnerState> {
  // Windows creates processes without copying the parent: nothing to gain there.
  if (process.platform === "win32") return Promise.resolve({ started: false, reason: "not needed on Windows" });
  spawnerStart ??= ProcessSpawner.start().then(
    (started): SpawnerState => {
      spawner = started;
      return { started: true };
    },
    (error: Error): SpawnerState => ({ started: false, reason: error.message }),
  );
  return spawnerStart;
}

/** Stops this process's spawner (tests; a process exiting takes it along by itself). */
export function stopFfmpegSpawner(): void {
  spawner?.close();
  spawner = undefined;
  spawnerStart = undefined;
}

/** Where runs start now: from the spawner, or from this process (where it is not up). */
export function ffmpegStartsFrom(): "spawner" | "this process" {
  return spawner?.alive ? "spawner" : "this process";
}

async function startFfmpeg(args: readonly string[], stdio: [StdioWanted, StdioWanted, StdioWanted]): Promise<StartedProcess> {
  if (spawner?.alive) {
    try {
      return await spawner.spawn(ffmpegPath(), args, stdio);
    } catch (error) {
      if (spawner.alive) throw error;
    }
  }
  // Gone (killed from outside): started again for the runs after this one.
  if (spawner && !spawner.alive) {
    spawner = undefined;
    spawnerStart = undefined;
  }
  void startFfmpegSpawner();
  return spawnHere(ffmpegPath(), args, stdio);
}

export interface FfmpegRun {
  /** Piped to ffmpeg's stdin (`pipe:0`); an error on it kills ffmpeg ("Input stream error"). */
  input?: Readable;
  /** Where ffmpeg's stdout (`pipe:1`) is piped, ended with it. */
  output?: Writable;
  /** Kills ffmpeg; before the start, nothing is started. */
  signal?: AbortSignal;
  /** Its report is what is wanted, whatever the exit status (ffmpeg with no output named describes its input and exits 1). */
  anyExitCode?: boolean;
}

/**
 * Runs ffmpeg with `args` until it exits, and resolves with its report (stderr: its head and
 * tail where long). Fails with an FfmpegError when it cannot start, exits non-zero (unless
 * `anyExitCode`) or is killed. Whoever reads `output` waits for its end as well: the process can exit before its
 * last bytes are read.
 */
export async function runFfmpeg(args: readonly string[], { input, output, signal, anyExitCode = false }: FfmpegRun = {}): Promise<string> {
  // An abort that came before the listener below would never fire: do not start at all.
  if (signal?.aborted) throw new FfmpegError("aborted before ffmpeg started", "");
  let started: StartedProcess;
  try {
    started = await startFfmpeg(args, [input ? "pipe" : "ignore", output ? "pipe" : "ignore", "pipe"]);
  } catch (error) {
    throw new FfmpegError(`ffmpeg could not start: ${(error as Error).message}`, "");
  }
  const report = readReport(started.stderr);
  const kill = () => started.kill("SIGKILL");
  signal?.addEventListener("abort", kill, { once: true });
  // Aborted while it was starting.
  if (signal?.aborted) kill();
  let inputError: Error | undefined;
  if (input && started.stdin) {
    // ffmpeg may stop reading before the end (it knows enough, or it failed): the rest is refused (EPIPE), as expected.
    started.stdin.on("error", () => undefined);
    input.on("error", (error) => {
      inputError = error;
      kill();
    });
    input.pipe(started.stdin);
  }
  if (output && started.stdout) {
    started.stdout.on("error", (error) => output.destroy(error));
    started.stdout.pipe(output, { end: true });
  }
  let exit: Awaited<StartedProcess["exited"]>;
  try {
    exit = await started.exited;
    await report.ended;
  } finally {
    signal?.removeEventListener("abort", kill);
  }
  const text = report.text();
  if (inputError) throw new FfmpegError(`Input stream error: ${inputError.message}`, text);
  if (exit.signal || signal?.aborted) throw new FfmpegError(`ffmpeg was killed with signal ${exit.signal ?? "SIGKILL"}`, text);
  if (exit.code !== 0 && !anyExitCode) throw new FfmpegError(`ffmpeg exited with code ${exit.code}: ${closingErrorLines(text)}`, text);
  return text;
}

const REPORT_PART_CHARS = 64 * 1024;

/**
 * What is kept of ffmpeg's report is its head (the input's description) and its tail (the last
 * progress and error lines); a decode of hours prints megabytes of progress in between.
 */
function readReport(stderr: Readable | null): { text: () => string; ended: Promise<void> } {
  let head = "";
  let tail = "";
  if (!stderr) return { text: () => "", ended: Promise.resolve() };
  stderr.setEncoding("latin1");
  stderr.on("data", (chunk: string) => {
    if (head.length < REPORT_PART_CHARS) head += chunk;
    else tail = (tail + chunk).slice(-REPORT_PART_CHARS);
  });
  // A report cut off (the process killed, its spawner gone) is still what there is.
  return { text: () => head + tail, ended: finished(stderr).catch(() => undefined) };
}

/** The report's closing lines that say what went wrong: those after its last indented or "[component @ ...]" line. */
function closingErrorLines(report: string): string {
  const lines = report.trim().split(/\r\n|\r|\n/);
  const closing: string[] = [];
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (line.startsWith(" ") || line.startsWith("[")) break;
    closing.unshift(line);
  }
  return closing.join("\n");
}
