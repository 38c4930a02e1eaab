/** What the node and its spawner (spawnerProcess.ts) say to each other over IPC. */

/** Each stdio descriptor of the child: a Unix socket connection from the node, or nothing (/dev/null). */
export type SpawnedStdio = "socket" | "ignore";

export type SpawnerRequest =
  | { type: "spawn"; id: number; file: string; args: string[]; stdio: [SpawnedStdio, SpawnedStdio, SpawnedStdio] }
  | { type: "kill"; id: number; signal: NodeJS.Signals };

export type SpawnerReply =
  | { type: "ready" }
  | { type: "spawned"; id: number; pid: number }
  | { type: "failed"; id: number; message: string }
  | { type: "exit"; id: number; code: number | null; signal: NodeJS.Signals | null };

/** A connection's first bytes: the request's id (uint32, big-endian), then the descriptor it is (0, 1 or 2). */
export const TOKEN_BYTES = 5;

export function connectionToken(id: number, fd: number): Buffer {
  const token = Buffer.alloc(TOKEN_BYTES);
  token.writeUInt32BE(id, 0);
  token[4] = fd;
  return token;
}
