import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { InFlightRequests } from "../../src/http/inFlightRequests.js";

// The node's count of open responses, on a real HTTP server: what shutdown waits for, and when a
// quiet spell (no request in flight for `afterMs`) starts the idle work.

const QUIET_MS = 150;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: Server | undefined;
let inFlight: InFlightRequests | undefined;
afterEach(async () => {
  inFlight?.stop();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server whose responses end when `release` is called with their path (at once for other paths). */
async function start(quietRuns: number[], interrupts: number[] = [], closes: number[] = []) {
  const held = new Map<string, () => void>();
  const started = performance.now();
  inFlight = new InFlightRequests({ afterMs: QUIET_MS, run: () => quietRuns.push(performance.now() - started), interrupt: () => interrupts.push(performance.now() - started) });
  const tracker = inFlight;
  server = createServer((req, res) => {
    tracker.track(res);
    res.once("close", () => closes.push(performance.now() - started));
    if (req.url?.startsWith("/hold")) held.set(req.url, () => res.end("done"));
    else res.end("ok");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  return {
    get: (path: string) => fetch(`${base}${path}`).then((r) => r.text()),
    release: (path: string) => held.get(path)?.(),
    whenHeld: async (path: string) => {
      while (!held.has(path)) await sleep(5);
    },
    tracker,
  };
}

describe("InFlightRequests", () => {
  it("runs the quiet work once after the start, and once after each later spell of requests; a request interrupts it", async () => {
    const runs: number[] = [];
    const interrupts: number[] = [];
    const node = await start(runs, interrupts);
    await sleep(QUIET_MS * 3);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toBeGreaterThanOrEqual(QUIET_MS - 5);
    // Left alone, nothing more.
    await sleep(QUIET_MS * 2);
    expect(runs).toHaveLength(1);
    expect(interrupts).toHaveLength(0);
    await node.get("/a");
    expect(interrupts).toHaveLength(1);
    await node.get("/b");
    expect(interrupts).toHaveLength(2);
    await sleep(QUIET_MS * 3);
    expect(runs).toHaveLength(2);
  });

  it("never runs it while a request is in flight, and waits a whole spell after the last one closes", async () => {
    const runs: number[] = [];
    const closes: number[] = [];
    const node = await start(runs, [], closes);
    await sleep(QUIET_MS * 2);
    expect(runs).toHaveLength(1);
    const answer = node.get("/hold/1");
    await node.whenHeld("/hold/1");
    expect(node.tracker.idle).toBe(false);
    await sleep(QUIET_MS * 3);
    expect(runs).toHaveLength(1);
    node.release("/hold/1");
    expect(await answer).toBe("done");
    const until = performance.now() + 5_000;
    while (runs.length < 2 && performance.now() < until) await sleep(10);
    expect(runs).toHaveLength(2);
    // Timed from the response's close on the server (timers may fire late, never early).
    expect(runs[1]! - closes.at(-1)!).toBeGreaterThanOrEqual(QUIET_MS - 2);
    expect(node.tracker.idle).toBe(true);
  });

  it("tells shutdown when the last response closes, and runs no quiet work once stopped", async () => {
    const runs: number[] = [];
    const node = await start(runs);
    const answer = node.get("/hold/2");
    await node.whenHeld("/hold/2");
    let idleAt: number | undefined;
    node.tracker.onIdle(() => {
      idleAt = performance.now();
    });
    expect(idleAt).toBeUndefined();
    node.tracker.stop();
    node.release("/hold/2");
    await answer;
    await sleep(QUIET_MS * 3);
    expect(idleAt).toBeDefined();
    expect(runs).toHaveLength(0);
  });
});
