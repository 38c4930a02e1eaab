import { fork, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeAudio, encodeAudio, startFfmpegSpawner } from "../../src/media/ffmpeg.js";
import { ffmpegStartsFrom, stopFfmpegSpawner } from "../../src/media/ffmpegProcess.js";
import { ProcessSpawner } from "../../src/media/processSpawner.js";
import { connectionToken, type SpawnerReply, type SpawnerRequest } from "../../src/media/spawnerProtocol.js";

/** The real spawner process, starting real programs (sh, cat, sleep) with their stdio on its sockets. */
describe("the process spawner", () => {
  let spawner: ProcessSpawner;
  beforeAll(async () => {
    spawner = await ProcessSpawner.start();
  });
  afterAll(() => spawner.close());

  it("starts a process whose parent is the spawner, not this process", async () => {
    const child = await spawner.spawn("sh", ["-c", "echo $PPID"], ["ignore", "pipe", "ignore"]);
    const parent = Number((await text(child.stdout!)).trim());
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(parent).toBe(spawner.pid);
    expect(parent).not.toBe(process.pid);
  });

  it("passes stdin to stdout byte for byte through its sockets (8 MB through cat), stdin's end being the child's end of input", async () => {
    const data = randomBytes(8 << 20);
    const child = await spawner.spawn("cat", [], ["pipe", "pipe", "ignore"]);
    const chunks: Buffer[] = [];
    child.stdout!.on("data", (chunk: Buffer) => chunks.push(chunk));
    const ended = once(child.stdout!, "end");
    Readable.from([data.subarray(0, 3 << 20), data.subarray(3 << 20)]).pipe(child.stdin!);
    await ended;
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
    expect((await child.exited).code).toBe(0);
  });

  it("gives stderr and the exit status", async () => {
    const child = await spawner.spawn("sh", ["-c", "echo went wrong >&2; exit 3"], ["ignore", "ignore", "pipe"]);
    expect(await text(child.stderr!)).toBe("went wrong\n");
    expect(await child.exited).toEqual({ code: 3, signal: null });
  });

  it("kills what it started", async () => {
    const child = await spawner.spawn("sleep", ["30"], ["ignore", "ignore", "ignore"]);
    child.kill("SIGKILL");
    expect(await child.exited).toEqual({ code: null, signal: "SIGKILL" });
  });

  it("refuses a program that does not exist", async () => {
    await expect(spawner.spawn("/nonexistent/ffmpeg", [], ["ignore", "ignore", "pipe"])).rejects.toThrow(/ENOENT/);
  });

  it("runs many at once, each with its own streams", async () => {
    const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => spawner.spawn("sh", ["-c", `read line; echo "$line ${i}"`], ["pipe", "pipe", "ignore"])));
    const answers = await Promise.all(
      runs.map((child, i) => {
        child.stdin!.end(`run\n`);
        return text(child.stdout!).then((out) => [out.trim(), i] as const);
      }),
    );
    for (const [out, i] of answers) expect(out).toBe(`run ${i}`);
  });

  it("when killed from outside, cuts off what it started (exited as killed) and says it is gone", async () => {
    const own = await ProcessSpawner.start();
    const child = await own.spawn("cat", [], ["pipe", "pipe", "ignore"]);
    process.kill(own.pid!, "SIGKILL");
    expect(await child.exited).toEqual({ code: null, signal: "SIGKILL" });
    await expect.poll(() => own.alive).toBe(false);
    await expect(own.spawn("cat", [], ["ignore", "ignore", "ignore"])).rejects.toThrow(/exited/);
  });

  it("keeps a connection that arrives before its request (the socket and the IPC channel race) and starts the process once the request comes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hearth-spawner-race-"));
    const socketPath = join(dir, "spawner.sock");
    const raw = fork(fileURLToPath(new URL("../../src/media/spawnerProcess.ts", import.meta.url)), [socketPath], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    try {
      const replies: SpawnerReply[] = [];
      raw.on("message", (reply: SpawnerReply) => replies.push(reply));
      await expect.poll(() => replies.some((reply) => reply.type === "ready")).toBe(true);
      const stdout = connect(socketPath);
      stdout.write(connectionToken(7, 1));
      const output = text(stdout);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the connection is there, its request is not
      raw.send({ type: "spawn", id: 7, file: "sh", args: ["-c", "echo late request"], stdio: ["ignore", "socket", "ignore"] } satisfies SpawnerRequest);
      expect(await output).toBe("late request\n");
      await expect.poll(() => replies.find((reply) => reply.type === "exit")).toEqual({ type: "exit", id: 7, code: 0, signal: null });
    } finally {
      raw.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exits with the process that started it, taking its children along and removing its socket's directory", async () => {
    // A separate Node process starts a spawner, has it start a long sleep, prints both pids and exits.
    const script = `
      const { ProcessSpawner } = await import(${JSON.stringify(new URL("../../src/media/processSpawner.ts", import.meta.url).href)});
      const spawner = await ProcessSpawner.start();
      await spawner.spawn("sleep", ["60"], ["ignore", "ignore", "ignore"]);
      const { execSync } = await import("node:child_process");
      const sleeper = Number(execSync("pgrep -P " + spawner.pid + " sleep").toString());
      const { readFileSync } = await import("node:fs");
      const socketPath = readFileSync("/proc/" + spawner.pid + "/cmdline", "utf8").split("\\0").filter(Boolean).at(-1);
      console.log(JSON.stringify({ spawner: spawner.pid, sleeper, socketPath }));
      process.exit(0);`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    const { spawner: spawnerPid, sleeper, socketPath } = JSON.parse(run.stdout) as { spawner: number; sleeper: number; socketPath: string };
    expect(socketPath).toMatch(/hearth-spawner-.+\/spawner\.sock$/);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(() => alive(spawnerPid) || alive(sleeper), { timeout: 5_000 }).toBe(false);
    expect(existsSync(dirname(socketPath))).toBe(false);
  });
});

describe("ffmpeg through the spawner", () => {
  afterAll(() => stopFfmpegSpawner());

  it("encodes and decodes with ffmpeg started from the spawner", async () => {
    expect(await startFfmpegSpawner()).toEqual({ started: true });
    expect(ffmpegStartsFrom()).toBe("spawner");
    const tone = Float32Array.from({ length: 24000 }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 24000));
    const flac = await encodeAudio(tone, 24000, "flac");
    expect((await decodeAudio(flac, 24000)).length).toBe(24000);
  });

  it("starts ffmpeg from this process while the spawner is gone, and starts a new spawner for the runs after", async () => {
    expect(await startFfmpegSpawner()).toEqual({ started: true });
    stopFfmpegSpawner();
    expect(ffmpegStartsFrom()).toBe("this process");
    const tone = new Float32Array(24000);
    expect((await encodeAudio(tone, 24000, "wav")).length).toBeGreaterThan(48000);
    await expect.poll(() => ffmpegStartsFrom()).toBe("spawner");
  });
});
