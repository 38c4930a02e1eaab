import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * A loopback TCP relay in front of a real server: what a pool sees of a box that goes down and
 * comes back. `off()` closes the port and drops every connection (a crashed box: new connections
 * are refused, streams break); `on()` listens again on the same port; `dieAfter(bytes)` lets that
 * many more response bytes through and then goes off (a box that dies mid-answer).
 */
export class TcpRelay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private budget = Number.POSITIVE_INFINITY;
  port = 0;

  private constructor(private readonly targetPort: number) {}

  static async start(targetPort: number): Promise<TcpRelay> {
    const relay = new TcpRelay(targetPort);
    await relay.on();
    return relay;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/api/v1`;
  }

  async on(): Promise<void> {
    this.budget = Number.POSITIVE_INFINITY;
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async off(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  dieAfter(bytes: number): void {
    this.budget = bytes;
  }

  private pipe(client: Socket): void {
    const target = createConnection(this.targetPort, "127.0.0.1");
    this.sockets.add(client).add(target);
    const drop = () => {
      client.destroy();
      target.destroy();
      this.sockets.delete(client);
      this.sockets.delete(target);
    };
    client.on("error", drop).on("close", drop);
    target.on("error", drop).on("close", drop);
    client.on("data", (data: Buffer) => target.write(data));
    target.on("data", (data: Buffer) => {
      if (data.length <= this.budget) {
        this.budget -= data.length;
        client.write(data);
        return;
      }
      client.write(data.subarray(0, this.budget));
      this.budget = 0;
      void this.off();
    });
  }
}
