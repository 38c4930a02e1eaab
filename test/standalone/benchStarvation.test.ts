import { describe, expect, it } from "vitest";
import type { RequestTrace } from "../../scripts/bench/metrics.js";
import { starvedRequests } from "../../scripts/bench/vsLlamaServer.js";

// 16 clients on 4 sequences: request i of the burst must have its first token within
// (floor(i / 4) + 2) turns, a turn being the median time a request holds a sequence.
const TURN = 100;
function trace(firstTokenAt: number): RequestTrace {
  return { startedAt: 0, outputTimes: [firstTokenAt, firstTokenAt + TURN], endedAt: firstTokenAt + TURN, promptTokens: 10, completionTokens: 2, finishReason: "length" };
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
});
