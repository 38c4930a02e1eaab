import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { dirname } from "node:path";
import { TOKEN_BYTES, type SpawnerReply, type SpawnerRequest } from "./spawnerProtocol.js";

/**
 * The spawner: a small process the node starts while it is still small, which starts processes
 * (ffmpeg) for it. Starting a child from a large process is slow where libuv forks (Node 20's
 * libuv copies the parent's page tables before fork returns: 50-70 ms with 1 GB resident, with
 * the node's event loop held all along); from this process it costs a few milliseconds, off the
 * node's event loop. The node asks over IPC; each stdio stream it wants is a Unix socket
 * connection of its own to this process's server, which the child gets as that descriptor, so
 * data flows between the node and the child directly. It imports nothing but Node's own modules.
 *
 * argv[2]: the path to listen on (in a directory only this user can enter).
 */

interface Pending {
  request: Extract<SpawnerRequest, { type: "spawn" }>;
  sockets: (Socket | undefined)[];
}

const socketPath = process.argv[2];
if (!socketPath || !process.send) {
  process.stderr.write("the spawner is started by the node, with a socket path and an IPC channel\n");
  process.exit(2);
}
const send = (reply: SpawnerReply) => process.send?.(reply);

const pending = new Map<number, Pending>();
const running = new Map<number, ChildProcess>();
/** Connections whose request has not come yet (the socket and the IPC channel race): kept a while for it. */
const early = new Map<number, { sockets: (Socket | undefined)[]; timer: NodeJS.Timeout }>();
const EARLY_KEPT_MS = 30_000;

/**
 * A connection first sends its token (the request's id and which descriptor it is) and nothing
 * more until the node hears that the process started: so nothing here ever reads the child's data.
 */
const server = createServer({ allowHalfOpen: true }, (socket) => {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    if (head.length < TOKEN_BYTES) return;
    socket.off("data", onData);
    const id = head.readUInt32BE(0);
    const fd = head[4]!;
    const entry = pending.get(id);
    if (fd > 2 || head.length > TOKEN_BYTES || (entry && entry.request.stdio[fd] !== "socket")) {
      socket.destroy();
      return;
    }
    if (entry) {
      entry.sockets[fd] = socket;
      startIfConnected(entry);
      return;
    }
    let waiting = early.get(id);
    if (!waiting) {
      const timer = setTimeout(() => {
        for (const kept of early.get(id)?.sockets ?? []) kept?.destroy();
        early.delete(id);
      }, EARLY_KEPT_MS);
      waiting = { sockets: [], timer };
      early.set(id, waiting);
    }
    waiting.sockets[fd] = socket;
  };
  socket.on("data", onData);
  socket.on("error", () => undefined);
});

/** Starts the child once every socket it takes has connected, then lets go of them (the child holds them now). */
function startIfConnected({ request, sockets }: Pending): void {
  if (request.stdio.some((kind, fd) => kind === "socket" && !sockets[fd])) return;
  pending.delete(request.id);
  // In this same turn of the loop the sockets are handed to the child and closed here: this
  // process never reads from them (reads would happen in a later turn).
  try {
    const child = spawn(request.file, request.args, {
      stdio: request.stdio.map((kind, fd) => (kind === "socket" ? sockets[fd]! : "ignore")) as ("ignore" | Socket)[],
      windowsHide: true,
    });
    if (child.pid === undefined) {
      // It did not start (ENOENT, EACCES): the error follows.
      child.on("error", (error) => send({ type: "failed", id: request.id, message: error.message }));
      return;
    }
    running.set(request.id, child);
    // Once started, its exit says how it ended (a failed kill changes nothing).
    child.on("error", () => undefined);
    child.on("exit", (code, signal) => {
      running.delete(request.id);
      send({ type: "exit", id: request.id, code, signal });
    });
    send({ type: "spawned", id: request.id, pid: child.pid });
  } catch (error) {
    send({ type: "failed", id: request.id, message: (error as Error).message });
  } finally {
    for (const socket of sockets) socket?.destroy();
  }
}

process.on("message", (request: SpawnerRequest) => {
  if (request.type === "spawn") {
    const arrived = early.get(request.id);
    if (arrived) {
      clearTimeout(arrived.timer);
      early.delete(request.id);
    }
    const entry: Pending = { request, sockets: arrived?.sockets ?? [] };
    pending.set(request.id, entry);
    startIfConnected(entry);
  } else if (request.type === "kill") {
    running.get(request.id)?.kill(request.signal);
    // A kill for a request still connecting: it never starts.
    const waiting = pending.get(request.id);
    if (waiting) {
      pending.delete(request.id);
      for (const socket of waiting.sockets) socket?.destroy();
      send({ type: "failed", id: request.id, message: "killed before it started" });
    }
  }
});

// The node is gone (or let go of this process): its children go too, and the directory the node
// made for the socket (a node killed outright cannot remove it).
process.on("disconnect", () => {
  for (const child of running.values()) child.kill("SIGKILL");
  server.close();
  rmSync(dirname(socketPath), { recursive: true, force: true });
  process.exit(0);
});

server.listen(socketPath, () => send({ type: "ready" }));
server.on("error", (error) => {
  process.stderr.write(`the spawner could not listen on ${socketPath}: ${error.message}\n`);
  process.exit(1);
});
