import { afterEach, expect, it } from "vitest";
import { type Stall, StallWatch, stallLogFields } from "../../src/metrics/StallWatch.js";

/** Holds the event loop, as a slow synchronous parse or tokenization would. */
function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let watch: StallWatch | undefined;
afterEach(() => watch?.stop());

function startWatch(thresholdMs: number): Stall[] {
  const stalls: Stall[] = [];
  watch = new StallWatch({ thresholdMs, onStall: (stall) => stalls.push(stall) }).start();
  return stalls;
}

it("reports a held loop with the activities in flight, newest first, and one that ended while holding it", async () => {
  const stalls = startWatch(150);
  const endStream = watch!.begin("request", () => ({ route: "/api/v1/chat/completions", requestId: "streaming" }));
  await sleep(120);
  const endParse = watch!.begin("request", () => ({ route: "/api/v1/embeddings", requestId: "parsing" }));
  holdLoop(400);
  // It ends inside the callback that held the loop: it is still a suspect.
  endParse();
  await sleep(120);
  expect(stalls).toHaveLength(1);
  const [stall] = stalls;
  expect(stall!.heldMs).toBeGreaterThanOrEqual(300);
  expect(stall!.heldMs).toBeLessThan(1000);
  expect(stall!.suspects.map((s) => s.requestId)).toEqual(["parsing", "streaming"]);
  expect(stall!.suspects[0]).toMatchObject({ kind: "request", route: "/api/v1/embeddings" });
  expect(stall!.suspects[0]!.runningMs).toBeGreaterThanOrEqual(390);
  expect(stall!.suspects[1]!.runningMs).toBeGreaterThan(stall!.suspects[0]!.runningMs);
  expect(stall!.startedDuring).toBe(0);
  endStream();
  expect(watch!.activeCount).toBe(0);
});

it("does not name an activity that ended ticks before the loop was held, nor report a hold under the threshold", async () => {
  const stalls = startWatch(250);
  const endEarly = watch!.begin("model load", () => ({ models: "early" }));
  await sleep(20);
  endEarly();
  // More than two ticks pass before the hold.
  await sleep(150);
  holdLoop(100);
  await sleep(100);
  expect(stalls).toEqual([]);
  holdLoop(400);
  await sleep(100);
  expect(stalls).toHaveLength(1);
  expect(stalls[0]!.suspects).toEqual([]);
});

it("logs the ten newest suspects in detail and counts all of them by what they are", async () => {
  const stalls = startWatch(150);
  const ends = [
    ...Array.from({ length: 12 }, (_, i) => watch!.begin("request", () => ({ route: "/api/v1/chat/completions", requestId: `chat${i}` }))),
    watch!.begin("request", () => ({ route: "/api/v1/audio/speech", requestId: "speech" })),
    watch!.begin("model load", () => ({ models: "tts-kokoro" })),
  ];
  holdLoop(300);
  await sleep(100);
  expect(stalls).toHaveLength(1);
  expect(stalls[0]!.suspects).toHaveLength(14);
  const fields = stallLogFields(stalls[0]!);
  expect(fields.inFlight).toHaveLength(10);
  expect(fields.moreInFlight).toBe(4);
  expect(fields.inFlightCounts).toEqual({ "request /api/v1/chat/completions": 12, "request /api/v1/audio/speech": 1, "model load tts-kokoro": 1 });
  // A stall with few suspects lists them all and counts nothing apart.
  expect(stallLogFields({ heldMs: 250, suspects: stalls[0]!.suspects.slice(0, 3), startedDuring: 0 })).toEqual({ heldMs: 250, inFlight: stalls[0]!.suspects.slice(0, 3) });
  for (const end of ends) end();
  // Ending twice changes nothing.
  ends[0]!();
  expect(watch!.activeCount).toBe(0);
});

it("watches nothing once stopped, and a stopped watch's activities cost nothing", async () => {
  const stalls = startWatch(150);
  watch!.stop();
  const end = watch!.begin("request", () => ({}));
  holdLoop(300);
  await sleep(100);
  end();
  expect(stalls).toEqual([]);
  expect(watch!.activeCount).toBe(0);
});

it("counts apart, and does not name, the activities that began after the loop was taken", async () => {
  const stalls = startWatch(150);
  const endHolder = watch!.begin("request", () => ({ requestId: "holder" }));
  holdLoop(300);
  // Requests that queued up while the loop was held begin as it catches up.
  const ends = Array.from({ length: 3 }, (_, i) => watch!.begin("request", () => ({ requestId: `late${i}` })));
  await sleep(100);
  expect(stalls).toHaveLength(1);
  expect(stalls[0]!.suspects.map((s) => s.requestId)).toEqual(["holder"]);
  expect(stalls[0]!.startedDuring).toBe(3);
  for (const end of [endHolder, ...ends]) end();
});
