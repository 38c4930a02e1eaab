import { describe, expect, it } from "vitest";
import type { RequestTrace } from "../../scripts/bench/metrics.js";
import { starvedRequests } from "../../scripts/bench/vsLlamaServer.js";
import { runConcurrent } from "../../scripts/bench/workload.js";

// 16 clients on 4 sequences: request i of the burst must have its first token within
// (floor(i / 4) + 2) turns of being sent, a turn being the median time a request holds a sequence.
const TURN = 100;
function trace(firstTokenAt: number, startedAt = 0): RequestTrace {
  return { startedAt, outputTimes: [firstTokenAt, firstTokenAt + TURN], endedAt: firstTokenAt + TURN, promptTokens: 10, completionTokens: 2, finishReason: "length" };
}

describe("bench: starvation in a burst", () => {
  it("finds none when requests start in waves of four, in the order sent", () => {
    const fifo = Array.from({ length: 16 }, (_, i) => trace(Math.floor(i / 4) * TURN + 10));
    expect(starvedRequests(fifo, 4)).toEqual([]);
  });

  it("names the request that waited past its bound, with the turns it waited and those allowed", () => {
    const traces = Array.from({ length: 16 }, (_, i) => trace(Math.floor(i / 4) * TURN + 10));
    // Request 1 belongs to the first wave (allowed 2 turns) but started with the last one.
    traces[1] = trace(3 * TURN + 50);
    expect(starvedRequests(traces, 4)).toEqual([{ request: 1, waitedTurns: 3.5, allowedTurns: 2 }]);
  });

  it("counts each request's wait from its own send", () => {
    const traces = Array.from({ length: 16 }, (_, i) => trace(Math.floor(i / 4) * TURN + 10));
    // Request 15 was sent two turns late and started one turn after that: it waited one turn.
    traces[15] = trace(5 * TURN + 60, 4 * TURN + 60);
    expect(starvedRequests(traces, 4)).toEqual([]);
    // Sent at the start, the same first token is past its bound of five turns.
    traces[15] = trace(5 * TURN + 60);
    expect(starvedRequests(traces, 4)).toEqual([{ request: 15, waitedTurns: 5.6, allowedTurns: 5 }]);
  });
});

describe("bench: a staggered burst", () => {
  it("sends the burst's first requests in order, each staggerMs after the one before was sent, then closes the loop", async () => {
    const sentAt: number[] = [];
    const requests = Array.from({ length: 6 }, (_, i) => ({ messages: [{ role: "user" as const, content: String(i) }], maxTokens: 1 }));
    // The first four finish only once all four are out: on a loaded machine the staggers' timers
    // can run late, and a request finished meanwhile would let its client send request 3 early.
    let release!: () => void;
    const allFourSent = new Promise<void>((resolve) => (release = resolve));
    const startedAt = performance.now();
    const { traces } = await runConcurrent(
      async (request, onSent) => {
        const index = Number(request.messages[0]!.content);
        sentAt[index] = performance.now() - startedAt;
        onSent?.();
        if (sentAt.filter((at) => at !== undefined).length === 4) release();
        if (index < 4) await allFourSent;
        await new Promise((resolve) => setTimeout(resolve, 60));
        return trace(0);
      },
      requests,
      4,
      15,
    );
    expect(traces).toHaveLength(6);
    for (let k = 1; k < 4; k++) expect(sentAt[k]! - sentAt[k - 1]!).toBeGreaterThanOrEqual(15);
    // Requests 4 and 5 follow the first two to finish, not another stagger.
    expect(sentAt[4]! - sentAt[3]!).toBeGreaterThanOrEqual(50);
    expect(sentAt[5]! - sentAt[4]!).toBeLessThan(15);
  });

  it("waits for the request before to be sent, not only for the clock", async () => {
    const events: string[] = [];
    const requests = Array.from({ length: 3 }, (_, i) => ({ messages: [{ role: "user" as const, content: String(i) }], maxTokens: 1 }));
    await runConcurrent(
      async (request, onSent) => {
        const n = request.messages[0]!.content;
        events.push(`start ${n}`);
        // Request 0 takes 40 ms to leave (a slow connect): request 1 must not go before it.
        if (n === "0") await new Promise((resolve) => setTimeout(resolve, 40));
        events.push(`sent ${n}`);
        onSent?.();
        return trace(0);
      },
      requests,
      3,
      1,
    );
    expect(events).toEqual(["start 0", "sent 0", "start 1", "sent 1", "start 2", "sent 2"]);
  });
});
