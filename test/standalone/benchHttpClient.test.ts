import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpTarget, requestOnce, runOnOwnConnections } from "../../scripts/bench/http.js";
import { buildRequests, runConcurrent } from "../../scripts/bench/workload.js";

// A real HTTP peer on loopback that streams chat chunks as an OpenAI-style server does: it
// records which requests (by their number) reached it, how many streamed at once, and its connections.
const arrivals: number[] = [];
const requestsOnConnection = new WeakMap<Socket, number>();
let hangUpReusedConnections = false;
let hungUp = 0;
let inFlight = 0;
let maxInFlight = 0;
const connections = new Set<Socket>();
let closedConnections = 0;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      const parsed = JSON.parse(body) as { messages: { content: string }[]; max_tokens: number };
      // As llama-server does with some connections: closed after an answer, without a word, so the
      // next request written to it is never answered.
      const served = (requestsOnConnection.get(request.socket) ?? 0) + 1;
      requestsOnConnection.set(request.socket, served);
      if (hangUpReusedConnections && served > 1) {
        hungUp++;
        request.socket.destroy();
        return;
      }
      arrivals.push(Number(/Request (\d+)/.exec(parsed.messages.at(-1)!.content)![1]));
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      response.on("close", () => inFlight--);
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (data: unknown) => response.write(`data: ${JSON.stringify(data)}\n\n`);
      chunk({ choices: [{ delta: { role: "assistant", content: "" } }] });
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < parsed.max_tokens) {
          chunk({ choices: [{ delta: { content: `t${sent++}` }, finish_reason: null }] });
          return;
        }
        clearInterval(timer);
        chunk({ choices: [{ delta: {}, finish_reason: "length" }] });
        chunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: sent } });
        response.end("data: [DONE]\n\n");
      }, 2);
    });
  });
  server.on("connection", (socket) => {
    connections.add(socket);
    socket.on("close", () => {
      connections.delete(socket);
      closedConnections++;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const waitFor = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe("bench: its HTTP client", () => {
  it("times each streamed token and reads the usage chunk", async () => {
    const target = httpTarget({ baseUrl, model: "m" });
    try {
      const trace = await target.run(buildRequests(1, 5, 0)[0]!);
      expect(trace.completionTokens).toBe(5);
      expect(trace.promptTokens).toBe(7);
      expect(trace.finishReason).toBe("length");
      // The role chunk is not a token; the five content chunks are, in order.
      expect(trace.outputTimes).toHaveLength(5);
      expect([...trace.outputTimes].sort((a, b) => a - b)).toEqual(trace.outputTimes);
      expect(trace.outputTimes[0]!).toBeGreaterThanOrEqual(trace.startedAt);
    } finally {
      await target.dispose();
    }
  });

  it("runs a round on connections of its own and closes them after it", async () => {
    await waitFor(() => connections.size === 0);
    const closedBefore = closedConnections;
    const { traces } = await runOnOwnConnections({ baseUrl, model: "m" }, buildRequests(8, 3, 100), 4);
    expect(traces.map((t) => t.completionTokens)).toEqual(Array(8).fill(3));
    // Four closed-loop clients held four connections, and none stays open for the next round.
    await waitFor(() => connections.size === 0);
    expect(connections.size).toBe(0);
    expect(closedConnections - closedBefore).toBe(4);
  });

  it("makes a call between rounds on a connection of its own, closed after it", async () => {
    await waitFor(() => connections.size === 0);
    const closedBefore = closedConnections;
    const body = JSON.stringify({ model: "m", messages: buildRequests(1, 1, 400)[0]!.messages, max_tokens: 1 });
    const response = await requestOnce(`${baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toBe("text/event-stream");
    expect(response.text).toContain("data: [DONE]");
    await waitFor(() => connections.size === 0);
    expect(closedConnections - closedBefore).toBe(1);
  });

  it("sends a request again when the reused connection it was written to closes unanswered", async () => {
    hangUpReusedConnections = true;
    hungUp = 0;
    try {
      // One client, three requests one after another: each after the first is written to the
      // connection the one before used, which the server then closes.
      const { traces } = await runOnOwnConnections({ baseUrl, model: "m" }, buildRequests(3, 2, 300), 1);
      expect(traces.map((t) => t.completionTokens)).toEqual([2, 2, 2]);
      expect(hungUp).toBe(2);
    } finally {
      hangUpReusedConnections = false;
    }
  });

  it("sends a staggered burst one request after another, each once the one before is on its socket, and still all at once", async () => {
    arrivals.length = 0;
    maxInFlight = 0;
    const target = httpTarget({ baseUrl, model: "m" });
    const sentOrder: number[] = [];
    try {
      await runConcurrent(
        (request, onSent) =>
          target.run(request, () => {
            sentOrder.push(Number(/Request (\d+)/.exec(String(request.messages.at(-1)!.content))![1]));
            onSent?.();
          }),
        buildRequests(16, 40, 200),
        16,
        2,
      );
    } finally {
      await target.dispose();
    }
    const inOrder = Array.from({ length: 16 }, (_, i) => 200 + i);
    expect(sentOrder).toEqual(inOrder);
    expect([...arrivals].sort((a, b) => a - b)).toEqual(inOrder);
    // Staggered by milliseconds, the 16 streams of 80 ms or more were all open together.
    expect(maxInFlight).toBe(16);
  });
});
