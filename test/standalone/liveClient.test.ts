import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { LiveClient } from "../../src/console/LiveClient.js";

/** A real connection over loopback: the server's end and the client's. */
async function connect(clientOptions: ConstructorParameters<typeof WebSocket>[2] = {}) {
  const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await once(server, "listening");
  const accepted = once(server, "connection") as Promise<[WebSocket]>;
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`, clientOptions);
  await once(client, "open");
  const [serverEnd] = await accepted;
  cleanups.push(() => {
    client.terminate();
    server.close();
  });
  return { serverEnd, client };
}
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe("LiveClient: one connection of the console's live view", () => {
  it("skips snapshots while the reader is stopped, holding at most its bound, and sends the latest once it catches up", async () => {
    const { serverEnd, client } = await connect();
    const received: string[] = [];
    client.on("message", (data) => received.push(String(data).slice(0, 12)));
    const live = new LiveClient(serverEnd, 256 * 1024);
    // The reader stops: the kernel's buffers fill, then the server's.
    (client as unknown as { _socket: { pause(): void } })._socket.pause();
    const snapshot = (i: number) => `${String(i).padStart(12, "0")}${"x".repeat(256 * 1024)}`;
    let sent = 0;
    let mostBuffered = 0;
    for (let i = 0; i < 400; i++) {
      if (live.offer(() => snapshot(i), true)) sent++;
      mostBuffered = Math.max(mostBuffered, serverEnd.bufferedAmount);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // 100 MB offered; what the server held stayed within the bound and one snapshot.
    expect(sent).toBeLessThan(400);
    expect(mostBuffered).toBeLessThanOrEqual(256 * 1024 + snapshot(0).length + 64);
    // Reading again: the queue drains, and an unchanged offer still brings the latest.
    (client as unknown as { _socket: { resume(): void } })._socket.resume();
    await expect.poll(() => serverEnd.bufferedAmount, { timeout: 10_000 }).toBe(0);
    expect(live.offer(() => snapshot(399), false)).toBe(true);
    await expect.poll(() => received.at(-1), { timeout: 10_000 }).toBe(String(399).padStart(12, "0"));
    // Caught up: unchanged snapshots are not sent again.
    expect(live.offer(() => snapshot(399), false)).toBe(false);
  });

  it("the heartbeat keeps a peer that answers pings and cuts one that does not", async () => {
    const answering = await connect();
    const silent = await connect({ autoPong: false });
    const alive = new LiveClient(answering.serverEnd);
    const gone = new LiveClient(silent.serverEnd);
    const pinged = Promise.all([once(answering.client, "ping"), once(silent.client, "ping")]);
    expect(alive.beat()).toBe(true);
    expect(gone.beat()).toBe(true);
    await pinged;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive.beat()).toBe(true);
    const closed = once(silent.serverEnd, "close");
    expect(gone.beat()).toBe(false);
    await closed;
    expect(answering.serverEnd.readyState).toBe(WebSocket.OPEN);
  });
});
