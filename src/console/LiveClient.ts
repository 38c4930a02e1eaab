import type { WebSocket } from "ws";

/**
 * Bytes a live view connection may hold unsent before snapshots to it are skipped. Snapshots are
 * whole pictures, so skipping loses nothing: the client gets the latest once it catches up. A
 * connection whose reader stopped (a laptop lid closed, a stuck tab) otherwise kept every
 * snapshot in the server's memory, twice a second while requests come in.
 */
export const LIVE_MAX_BUFFERED_BYTES = 1024 * 1024;

/** One connection of the live view: sends snapshots while it keeps up, and answers the heartbeat. */
export class LiveClient {
  /** A snapshot was skipped: the next offer sends, changed or not. */
  private behind = false;
  private answered = true;

  constructor(
    readonly ws: WebSocket,
    private readonly maxBufferedBytes = LIVE_MAX_BUFFERED_BYTES,
  ) {
    ws.on("pong", () => {
      this.answered = true;
    });
  }

  /** Sends the snapshot if it is new to this client and the client is not backed up; whether it was sent. */
  offer(text: () => string, changed: boolean): boolean {
    if (!changed && !this.behind) return false;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.behind = true;
      return false;
    }
    this.behind = false;
    this.ws.send(text());
    return true;
  }

  /**
   * The heartbeat: a connection that did not answer the last ping is cut (a peer gone without a
   * close, whose socket would otherwise stay open), else it is pinged again. Whether it lives.
   */
  beat(): boolean {
    if (!this.answered) {
      this.ws.terminate();
      return false;
    }
    this.answered = false;
    this.ws.ping();
    return true;
  }
}
