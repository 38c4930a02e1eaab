import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

// A stream's events are written straight to the socket as HTTP chunks (src/http/sse.ts). These
// tests read the bytes off a plain TCP socket, so a wrong chunk size, a missing terminator or a
// connection the server cannot reuse fails here even where a lenient client would cope.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry()] });
});
afterAll(() => server.stop());

const streamingBody = JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "Hello" }], max_tokens: 12, temperature: 0, stream: true });

function requestText(version: "1.0" | "1.1"): string {
  const { host } = new URL(server.baseUrl);
  return (
    `POST /api/v1/chat/completions HTTP/${version}\r\nHost: ${host}\r\nAuthorization: Bearer ${server.adminKey}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(streamingBody)}\r\n${version === "1.1" ? "Connection: keep-alive\r\n" : ""}\r\n${streamingBody}`
  );
}

/** Bytes arriving on a socket, read on demand. */
class Reader {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  closed = false;

  constructor(socket: Socket) {
    socket.on("data", (piece: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, piece]);
      this.waiting?.();
    });
    socket.on("close", () => {
      this.closed = true;
      this.waiting?.();
    });
  }

  private async fill(enough: () => boolean): Promise<void> {
    while (!enough()) {
      if (this.closed) throw new Error(`connection closed with ${this.buffered.length} bytes unread: ${JSON.stringify(this.buffered.toString("latin1").slice(0, 200))}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = undefined;
    }
  }

  async line(): Promise<string> {
    await this.fill(() => this.buffered.includes("\r\n"));
    const end = this.buffered.indexOf("\r\n");
    const line = this.buffered.subarray(0, end).toString("latin1");
    this.buffered = this.buffered.subarray(end + 2);
    return line;
  }

  async bytes(count: number): Promise<Buffer> {
    await this.fill(() => this.buffered.length >= count);
    const taken = this.buffered.subarray(0, count);
    this.buffered = this.buffered.subarray(count);
    return taken;
  }

  async rest(): Promise<Buffer> {
    await this.fill(() => this.closed);
    return this.buffered;
  }
}

async function readHead(reader: Reader): Promise<{ status: string; headers: Map<string, string> }> {
  const status = await reader.line();
  const headers = new Map<string, string>();
  for (let line = await reader.line(); line !== ""; line = await reader.line()) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status, headers };
}

/** The body of a chunked response, chunk by chunk, held to the HTTP/1.1 grammar. */
async function readChunks(reader: Reader): Promise<string[]> {
  const chunks: string[] = [];
  for (;;) {
    const sizeLine = await reader.line();
    expect(sizeLine).toMatch(/^[0-9a-f]+$/);
    const size = parseInt(sizeLine, 16);
    if (size === 0) {
      expect(await reader.line()).toBe("");
      return chunks;
    }
    chunks.push((await reader.bytes(size)).toString("utf8"));
    expect(await reader.line()).toBe("");
  }
}

function eventsOf(body: string): string[] {
  expect(body.endsWith("\n\n")).toBe(true);
  return body
    .slice(0, -2)
    .split("\n\n")
    .map((event) => {
      expect(event.startsWith("data: ")).toBe(true);
      return event.slice("data: ".length);
    });
}

function expectCompletionStream(events: string[]): void {
  expect(events.at(-1)).toBe("[DONE]");
  const chunks = events.slice(0, -1).map((data) => JSON.parse(data) as { object: string; choices: { finish_reason: string | null }[] });
  expect(chunks.length).toBeGreaterThan(2);
  for (const chunk of chunks) expect(chunk.object).toBe("chat.completion.chunk");
  expect(chunks.some((chunk) => chunk.choices[0]?.finish_reason === "length")).toBe(true);
}

describe("server-sent events on the wire", () => {
  it("HTTP/1.1: each event is one well-formed chunk, the body ends with the zero chunk, and the connection serves the next request", async () => {
    const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1");
    const reader = new Reader(socket);
    try {
      for (let request = 0; request < 2; request++) {
        socket.write(requestText("1.1"));
        const { status, headers } = await readHead(reader);
        expect(status).toBe("HTTP/1.1 200 OK");
        expect(headers.get("transfer-encoding")).toBe("chunked");
        expect(headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(headers.get("connection")).toBe("keep-alive");
        const chunks = await readChunks(reader);
        // One event per chunk: a client sees each token the moment its chunk arrives.
        for (const chunk of chunks) expect(eventsOf(chunk)).toHaveLength(1);
        expectCompletionStream(eventsOf(chunks.join("")));
      }
      expect(reader.closed).toBe(false);
    } finally {
      socket.destroy();
    }
  });

  it("HTTP/1.0: the stream is sent unframed and ends when the server closes the connection", async () => {
    const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1");
    const reader = new Reader(socket);
    try {
      socket.write(requestText("1.0"));
      const { status, headers } = await readHead(reader);
      expect(status).toBe("HTTP/1.1 200 OK");
      expect(headers.has("transfer-encoding")).toBe(false);
      expectCompletionStream(eventsOf((await reader.rest()).toString("utf8")));
    } finally {
      socket.destroy();
    }
  });
});
