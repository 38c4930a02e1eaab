import type { Response } from "express";
import { toErrorResponse } from "../errors.js";
import { formatErrorBody } from "./errorFormat.js";

/** How a stream frames its events, where it differs from the chat-completions framing. */
export interface SseFraming {
  /** The `event:` line of an event (the Responses standard names each event by its type); none by default. */
  eventName?: (data: unknown) => string | undefined;
  /** Whether the stream ends with `data: [DONE]` (default true; the Responses standard ends with its terminal event). */
  done?: boolean;
  /** The event an error after the first byte becomes (default: the error body in the node's error format). */
  errorEvent?: (error: unknown) => unknown;
}

/**
 * Server-sent events in the chat-completions framing by default: `data: <json>` events, ending
 * with `data: [DONE]`. An error before the first byte is a real status code (the caller throws);
 * an error after it goes into the stream, followed by [DONE].
 */
export class SseStream {
  private opened = false;

  constructor(
    private readonly res: Response,
    private readonly framing: SseFraming = {},
  ) {}

  get started(): boolean {
    return this.opened;
  }

  send(data: unknown): void {
    if (this.res.writableEnded) return;
    if (!this.opened) this.open();
    if (typeof data !== "string") {
      const name = this.framing.eventName?.(data);
      // JSON escapes line breaks, so a serialized event is always one data line (the per-token path).
      this.write(`${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
      return;
    }
    this.write(
      `${data
        .split(/\r\n|\r|\n/)
        .map((line) => `data: ${line}`)
        .join("\n")}\n\n`,
    );
  }

  fail(error: unknown): void {
    if (this.framing.errorEvent) {
      this.send(this.framing.errorEvent(error));
      this.end();
      return;
    }
    const { status, body } = toErrorResponse(error);
    const format = this.res.locals.ctx?.errorFormat ?? "provider";
    // The provider's shape wraps its body in `error`; the standard's body is already `{error: {...}}`.
    this.send(format === "standard" ? formatErrorBody(format, status, body) : { error: body });
    this.end();
  }

  end(): void {
    if (this.res.writableEnded) return;
    if (!this.opened) this.open();
    if (this.framing.done !== false) this.write("data: [DONE]\n\n");
    this.res.end();
  }

  /**
   * One event, framed as one HTTP chunk in one socket write. `res.write` frames a chunk as four
   * writes into a corked socket and a `writev` on the next tick, about 0.09 ms more of the main
   * thread per streamed token; where every core runs a llama.cpp thread, main-thread work during a
   * decode delays it by more than its own time (docs/bench.md). The direct write applies only while
   * this response owns the socket (a pipelined response waiting its turn has none) with its headers
   * sent, chunked framing on (HTTP/1.1) and nothing encoding the body; otherwise (an HTTP/1.0
   * client, a compressor) `res.write` frames it. `res.end()` still writes the terminating chunk.
   */
  private write(event: string): void {
    const { res } = this;
    const socket = res.socket;
    const framedHere = (res as { chunkedEncoding?: boolean }).chunkedEncoding === true && res.headersSent && !res.getHeader("Content-Encoding") && !res.writableNeedDrain;
    if (framedHere && socket?.writable) socket.write(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`);
    else res.write(event);
  }

  private open(): void {
    this.opened = true;
    this.res.status(200);
    this.res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    this.res.setHeader("Cache-Control", "no-cache, no-transform");
    this.res.setHeader("Connection", "keep-alive");
    this.res.setHeader("X-Accel-Buffering", "no");
    this.res.flushHeaders();
    // Tokens must leave as soon as they exist: no Nagle delay on the socket.
    this.res.socket?.setNoDelay(true);
  }
}
