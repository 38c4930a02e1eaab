import { type ChildProcess, fork, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { siblingModule } from "../engines/worker/siblingModule.js";
import { connectionToken, type SpawnedStdio, type SpawnerReply, type SpawnerRequest } from "./spawnerProtocol.js";

/** A started child process, however it was started: its pipes (null where not asked for), a kill and its exit. */
export interface StartedProcess {
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  kill(signal: NodeJS.Signals): void;
  /** Settles when the process has exited (its pipes may still hold data to read). */
  readonly exited: Promise<ProcessExit>;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export type StdioWanted = "pipe" | "ignore";

/** Starts `file` from this process (a fork of it, where libuv forks). Rejects when it cannot start (ENOENT). */
export function spawnHere(file: string, args: readonly string[], stdio: readonly [StdioWanted, StdioWanted, StdioWanted]): Promise<StartedProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: [...stdio], windowsHide: true });
    const exited = new Promise<ProcessExit>((settle) => child.once("exit", (code, signal) => settle({ code, signal })));
    child.once("error", reject);
    child.once("spawn", () => {
      child.off("error", reject);
      // A later error (a kill that fails) changes nothing the exit does not already say.
      child.on("error", () => undefined);
      resolve({ stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, kill: (signal) => child.kill(signal), exited });
    });
  });
}

interface Waiting {
  started: boolean;
  spawned: () => void;
  failed: (error: Error) => void;
  exited: (exit: ProcessExit) => void;
}

/**
 * The node's side of the spawner (spawnerProcess.ts): starts processes from a small process of
 * its own, so the node itself never forks once it holds models (see spawnerProcess.ts for why).
 * Each stdio stream is a Unix socket connection to the spawner that the child gets as that
 * descriptor; the data goes straight between this process and the child.
 */
export class ProcessSpawner {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private exitedSpawner = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly socketPath: string,
  ) {
    child.on("message", (reply: SpawnerReply) => this.onReply(reply));
    child.on("exit", () => this.onSpawnerExit());
  }

  /** Starts the spawner; resolves once it listens (rejects if it cannot start within `timeoutMs`). */
  static start(timeoutMs = 10_000): Promise<ProcessSpawner> {
    // A directory only this user can enter holds the socket: nobody else can ask for a process.
    const dir = mkdtempSync(join(tmpdir(), "hearth-spawner-"));
    const socketPath = join(dir, "spawner.sock");
    const entry = fileURLToPath(SPAWNER);
    const child = fork(entry, [socketPath], {
      // Sources run through tsx (tests) need it in the child too; the compiled copy runs as it is.
      execArgv: /\.[mc]?ts$/.test(entry) ? ["--import", "tsx"] : [],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    return new Promise((resolve, reject) => {
      const fail = (reason: string) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(new Error(`the process spawner did not start: ${reason}`));
      };
      const timer = setTimeout(() => fail(`no answer in ${timeoutMs} ms`), timeoutMs);
      const onError = (error: Error) => fail(error.message);
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => fail(`it exited (${signal ?? code})`);
      child.once("error", onError);
      child.once("exit", onExit);
      child.once("message", (reply: SpawnerReply) => {
        if (reply.type !== "ready") return fail(`it said ${JSON.stringify(reply)} first`);
        clearTimeout(timer);
        child.off("error", onError).off("exit", onExit);
        child.on("error", () => undefined);
        // Never what keeps the node's process alive (the IPC channel is held while processes run).
        child.unref();
        child.channel?.unref();
        resolve(new ProcessSpawner(child, socketPath));
      });
    });
  }

  /** The spawner's own process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** False once the spawner has exited: start processes here then. */
  get alive(): boolean {
    return !this.exitedSpawner;
  }

  /** Starts `file` from the spawner. Rejects when it cannot start (ENOENT) or the spawner is gone. */
  spawn(file: string, args: readonly string[], stdio: readonly [StdioWanted, StdioWanted, StdioWanted]): Promise<StartedProcess> {
    if (this.exitedSpawner) return Promise.reject(new Error("the process spawner has exited"));
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    // The request first, then its connections (the spawner also keeps a connection that comes first).
    this.send({ type: "spawn", id, file, args: [...args], stdio: stdio.map((kind) => (kind === "pipe" ? "socket" : "ignore")) as [SpawnedStdio, SpawnedStdio, SpawnedStdio] });
    const sockets: (Socket | null)[] = stdio.map((kind, fd) => {
      if (kind !== "pipe") return null;
      const socket = connect(this.socketPath);
      socket.write(connectionToken(id, fd));
      return socket;
    });
    const open = sockets.filter((socket): socket is Socket => socket !== null);
    let settleExit!: (exit: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((resolve) => (settleExit = resolve));
    if (this.waiting.size === 0) this.child.channel?.ref();
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.waiting.set(id, {
        started: false,
        spawned: () =>
          resolve({
            stdin: sockets[0] ?? null,
            stdout: sockets[1] ?? null,
            stderr: sockets[2] ?? null,
            kill: (signal) => this.send({ type: "kill", id, signal }),
            exited,
          }),
        failed: (error) => {
          for (const socket of open) socket.destroy();
          reject(error);
        },
        exited: settleExit,
      });
    });
    for (const socket of open) {
      socket.on("error", (error) => {
        // Refused or cut before the process started: it never will (the spawner drops the request).
        const waiting = this.waiting.get(id);
        if (waiting && !waiting.started) {
          this.forget(id);
          this.send({ type: "kill", id, signal: "SIGKILL" });
          waiting.failed(error);
        }
        // After the start, a connection cut belongs to a process that failed or exited: its exit says so.
      });
    }
    return started;
  }

  /** Stops the spawner (its children with it) and removes its socket's directory now (the process may end before the spawner's exit is seen). */
  close(): void {
    this.child.kill("SIGKILL");
    rmSync(dirname(this.socketPath), { recursive: true, force: true });
  }

  private send(request: SpawnerRequest): void {
    if (!this.exitedSpawner) this.child.send(request);
  }

  private onReply(reply: SpawnerReply): void {
    if (reply.type === "ready") return;
    const waiting = this.waiting.get(reply.id);
    if (!waiting) return;
    if (reply.type === "spawned") {
      waiting.started = true;
      waiting.spawned();
    } else {
      this.forget(reply.id);
      if (reply.type === "exit") waiting.exited({ code: reply.code, signal: reply.signal });
      else if (!waiting.started) waiting.failed(new Error(reply.message));
    }
  }

  private forget(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.child.channel?.unref();
  }

  /** The spawner died: what it started is cut off (its sockets closed, so it gets EOF and EPIPE) and counts as killed. */
  private onSpawnerExit(): void {
    this.exitedSpawner = true;
    for (const waiting of this.waiting.values()) {
      waiting.failed(new Error("the process spawner exited"));
      waiting.exited({ code: null, signal: "SIGKILL" });
    }
    this.waiting.clear();
  }
}

const SPAWNER = siblingModule(import.meta.url, "spawnerProcess");
