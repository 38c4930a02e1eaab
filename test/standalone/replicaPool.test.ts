import { describe, expect, it, vi } from "vitest";
import { UpstreamHealthCheck } from "../../src/config/backendSettings.js";
import { resolveUpstream } from "../../src/config/modelRegistry.js";
import { displayBaseUrl, type ResolvedReplica, upstreamReplicas } from "../../src/config/upstreamReplicas.js";
import { ModelAtCapacityError } from "../../src/errors.js";
import { chatAffinityKey, SHARED_PREFIX_MIN_CHARS } from "../../src/engines/upstream/affinityKey.js";
import { rendezvousOrder } from "../../src/engines/upstream/rendezvousHash.js";
import { type Replica, ReplicaPool } from "../../src/engines/upstream/ReplicaPool.js";
import { CheckedModelsConfig } from "../../src/models/loadModelsConfig.js";
import type { ChatGenerateOptions } from "../../src/engines/types.js";

/** The routing module alone: no server, no model. The e2e pool test (test/e2e/upstream-pool.test.ts) drives the same code over HTTP. */

const replica = (port: number, weight = 1, maxInFlight?: number): ResolvedReplica => ({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: undefined, weight, maxInFlight });
const healthCheck = (overrides: Partial<UpstreamHealthCheck> = {}) => UpstreamHealthCheck.parse(overrides);
const keys = (count: number, prefix = "user-") => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

/** Which replica (by port) owns each key. */
function owners(pool: ReplicaPool, list: readonly string[]): Map<string, string> {
  return new Map(list.map((key) => [key, pool.choose(`key:${key}`).id]));
}

function shares(owned: Map<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of owned.values()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return new Map([...counts].map(([id, count]) => [id, count / owned.size]));
}

describe("weighted rendezvous hashing", () => {
  // 30,000 keys: a share's standard deviation is about 0.3 points, so ±1.5 points is five of them.
  const TOLERANCE = 0.015;
  const many = keys(30_000);

  it("gives each replica a share of the keys proportional to its weight (±1.5 points over 30,000 keys)", () => {
    const pool = new ReplicaPool([replica(1, 1), replica(2, 1), replica(3, 2)], { modelId: "m", healthCheck: healthCheck() });
    const share = shares(owners(pool, many));
    const [a, b, c] = pool.replicas.map((r) => share.get(r.id) ?? 0);
    expect(Math.abs(a! - 0.25)).toBeLessThan(TOLERANCE);
    expect(Math.abs(b! - 0.25)).toBeLessThan(TOLERANCE);
    expect(Math.abs(c! - 0.5)).toBeLessThan(TOLERANCE);
  });

  it("moves only the new replica's share when one is added, and only the removed one's keys when one is removed", () => {
    const three = [replica(1), replica(2), replica(3, 2)];
    const before = owners(new ReplicaPool(three, { modelId: "m", healthCheck: healthCheck() }), many);
    const grown = new ReplicaPool([...three, replica(4)], { modelId: "m", healthCheck: healthCheck() });
    const after = owners(grown, many);
    const newcomer = grown.replicas[3]!.id;
    const moved = many.filter((key) => before.get(key) !== after.get(key));
    // Every key that moved went to the newcomer, and it took its weight's share (1 of 5).
    expect(moved.every((key) => after.get(key) === newcomer)).toBe(true);
    expect(Math.abs(moved.length / many.length - 0.2)).toBeLessThan(TOLERANCE);

    const shrunk = owners(new ReplicaPool([three[0]!, three[2]!], { modelId: "m", healthCheck: healthCheck() }), many);
    const removed = displayBaseUrl(three[1]!.baseUrl);
    for (const key of many) if (before.get(key) !== removed) expect(shrunk.get(key)).toBe(before.get(key));
  });

  it("orders every replica for a key, the same way every time", () => {
    const targets = [1, 2, 3, 4].map((i) => ({ id: `r${i}`, weight: 1 }));
    const order = rendezvousOrder("user-7", targets).map((t) => t.id);
    expect(new Set(order).size).toBe(4);
    expect(rendezvousOrder("user-7", [...targets].reverse()).map((t) => t.id)).toEqual(order);
  });
});

describe("ReplicaPool", () => {
  it("skips a replica at its maxInFlight for the next in the key's order, and answers the busy model's 503 when all are full", () => {
    const pool = new ReplicaPool([replica(1, 1, 1), replica(2, 1, 1), replica(3, 1, 1)], { modelId: "pooled", healthCheck: healthCheck() });
    const order = rendezvousOrder("key:k", pool.replicas);
    expect(pool.choose("key:k")).toBe(order[0]);
    const calls = [pool.begin(order[0]!)];
    expect(pool.choose("key:k")).toBe(order[1]);
    calls.push(pool.begin(order[1]!));
    expect(pool.choose("key:k")).toBe(order[2]);
    calls.push(pool.begin(order[2]!));
    expect(() => pool.choose("key:k")).toThrow(ModelAtCapacityError);
    expect(() => pool.choose(undefined)).toThrow(/"pooled" is at capacity/);
    calls[1]!.end({ ok: true });
    expect(pool.choose("key:k")).toBe(order[1]);
  });

  it("sends requests without a key to the replica with the fewest in flight for its weight (a weighted round robin when idle)", () => {
    const pool = new ReplicaPool([replica(1, 1), replica(2, 2)], { modelId: "m", healthCheck: healthCheck() });
    const [light, heavy] = pool.replicas as [Replica, Replica];
    const served = new Map<Replica, number>();
    for (let i = 0; i < 30; i++) {
      const chosen = pool.choose(undefined);
      served.set(chosen, (served.get(chosen) ?? 0) + 1);
      pool.begin(chosen).end({ ok: true });
    }
    expect([served.get(light), served.get(heavy)]).toEqual([10, 20]);
    // One in flight on each: half the heavy one's weight, all of the light one's, so the heavy one is next.
    const held = [pool.begin(heavy), pool.begin(light)];
    expect(pool.choose(undefined)).toBe(heavy);
    held[1]!.end({ ok: true });
    expect(pool.choose(undefined)).toBe(light);
  });

  it("ejects a failing replica with a doubling back-off and re-admits it when a check succeeds after it", async () => {
    const now = 1_000_000;
    let answering = false;
    const checks: number[] = [];
    const pool = new ReplicaPool([replica(1), replica(2)], {
      modelId: "m",
      healthCheck: healthCheck({ ejectMs: 20, maxEjectMs: 50 }),
      now: () => now,
      check: async () => {
        checks.push(now);
        return answering;
      },
    });
    const [sick, well] = pool.replicas as [Replica, Replica];
    const owned = keys(50).find((key) => pool.choose(`key:${key}`) === sick)!;
    pool.begin(sick).end({ ok: false, error: "ECONNREFUSED", eject: true });
    expect(sick.status()).toMatchObject({ healthy: false, ejectedUntil: now + 20, errors: 1, requests: 1, lastError: "ECONNREFUSED" });
    // Its keys go to the next replica in their order while it is out.
    expect(pool.choose(`key:${owned}`)).toBe(well);
    // The check after the back-off fails: out again for twice as long, then the cap.
    await vi.waitFor(() => expect(checks.length).toBe(1));
    expect(sick.status()).toMatchObject({ healthy: false, ejectedUntil: now + 40 });
    await vi.waitFor(() => expect(checks.length).toBe(2));
    expect(sick.status()).toMatchObject({ healthy: false, ejectedUntil: now + 50 });
    answering = true;
    await vi.waitFor(() => expect(sick.status()).toMatchObject({ healthy: true, ejectedUntil: null }));
    expect(pool.choose(`key:${owned}`)).toBe(sick);
    // Failures that are not the replica's (a caller's 4xx, a replica at capacity) do not eject it.
    pool.begin(sick).end({ ok: false, error: "at capacity", eject: false });
    expect(sick.status()).toMatchObject({ healthy: true, errors: 2 });
    pool.dispose();
  });

  it("checks replicas on its interval with unref'd timers, and stops when disposed", async () => {
    let checks = 0;
    const pool = new ReplicaPool([replica(1), replica(2)], {
      modelId: "m",
      healthCheck: healthCheck({ intervalMs: 50 }),
      check: async () => {
        checks++;
        return true;
      },
    }).startHealthChecks();
    await vi.waitFor(() => expect(checks).toBeGreaterThanOrEqual(4));
    pool.dispose();
    const after = checks;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(checks).toBe(after);
    // A pool of one has no checks at all.
    let single = 0;
    const one = new ReplicaPool([replica(1)], { modelId: "m", healthCheck: healthCheck({ intervalMs: 50 }), check: async () => ++single > 0 }).startHealthChecks();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(single).toBe(0);
    one.dispose();
  });

  it("re-admits a replica ejected while a slow check of it was running (the check after the back-off still runs)", async () => {
    let release!: () => void;
    const slow = new Promise<boolean>((resolve) => (release = () => resolve(true)));
    let calls = 0;
    const pool = new ReplicaPool([replica(1), replica(2)], {
      modelId: "m",
      healthCheck: healthCheck({ intervalMs: 50, ejectMs: 20 }),
      check: async () => (++calls === 1 ? slow : true),
    }).startHealthChecks();
    const [first] = pool.replicas as [Replica, Replica];
    await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(1));
    pool.begin(first).end({ ok: false, error: "reset", eject: true });
    // The probe after the 20 ms back-off comes while the first check still hangs.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(first.healthy).toBe(false);
    release();
    await vi.waitFor(() => expect(first.status()).toMatchObject({ healthy: true, ejectedUntil: null }));
    pool.dispose();
  });

  it("never ejects the only replica of a pool of one (its own error says more than a 503)", () => {
    const pool = new ReplicaPool([replica(1)], { modelId: "m", healthCheck: healthCheck() });
    pool.begin(pool.replicas[0]!).end({ ok: false, error: "ECONNREFUSED", eject: true });
    expect(pool.replicas[0]!.status()).toMatchObject({ healthy: true, errors: 1 });
    expect(pool.choose(undefined)).toBe(pool.replicas[0]);
  });

  it("names replicas by their base URL without credentials", () => {
    expect(displayBaseUrl("https://user:secret@gpu-1.internal:8000/v1/?token=abc#x")).toBe("https://gpu-1.internal:8000/v1");
    const pool = new ReplicaPool([{ ...replica(1), baseUrl: "http://node:pw@127.0.0.1:9/api/v1" }], { modelId: "m", healthCheck: healthCheck() });
    expect(pool.status()[0]!.baseUrl).toBe("http://127.0.0.1:9/api/v1");
  });
});

describe("what a chat request is routed on", () => {
  const chat = (messages: ChatGenerateOptions["messages"], key?: string) => ({ messages, sampling: { temperature: 0 }, cache: { key } }) as ChatGenerateOptions;
  const longSystem = "You are the narrator of a long story. ".repeat(Math.ceil(SHARED_PREFIX_MIN_CHARS / 30));

  it("uses prompt_cache_key, else a long first system message, else nothing", () => {
    expect(chatAffinityKey(chat([{ role: "user", content: "hi" }], "user-42"))).toBe("key:user-42");
    const a = chatAffinityKey(
      chat([
        { role: "system", content: longSystem },
        { role: "user", content: "one" },
      ]),
    );
    const b = chatAffinityKey(
      chat([
        { role: "system", content: longSystem },
        { role: "user", content: "two" },
      ]),
    );
    expect(a).toMatch(/^prefix:/);
    expect(b).toBe(a);
    expect(
      chatAffinityKey(
        chat([
          { role: "system", content: "Be brief." },
          { role: "user", content: "one" },
        ]),
      ),
    ).toBeUndefined();
  });
});

describe("upstream pool settings", () => {
  const entry = (upstream: Record<string, unknown>) => ({ models: [{ id: "pooled", type: "text", backend: "upstream", upstream }] });
  const problems = (upstream: Record<string, unknown>) => {
    const parsed = CheckedModelsConfig.safeParse(entry(upstream));
    return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  };

  it("refuses both a base URL and replicas, an empty list, a weight of zero or less, and a replica without a URL", () => {
    expect(problems({ baseUrl: "http://a/v1", replicas: [{ baseUrl: "http://b/v1" }] })).toEqual([
      "models.0.upstream.replicas: give either baseUrl/baseUrlEnv or replicas, not both (one base URL is a pool of one)",
    ]);
    expect(problems({ replicas: [] })).toEqual(["models.0.upstream.replicas: list at least one replica"]);
    expect(problems({ replicas: [{ baseUrl: "http://b/v1", weight: 0 }] })).toEqual(["models.0.upstream.replicas.0.weight: weight must be greater than 0"]);
    expect(problems({ replicas: [{ baseUrl: "http://b/v1", weight: -2 }] })).toHaveLength(1);
    expect(problems({ replicas: [{ apiKeyEnv: "K" }] })).toEqual(["models.0.upstream.replicas.0: a replica needs baseUrl or baseUrlEnv"]);
    expect(problems({ replicas: [{ baseUrl: "http://b/v1", weight: 2.5, maxInFlight: 4 }], healthCheck: { intervalMs: 500 } })).toEqual([]);
  });

  it("resolves each replica's URL and key from the environment; a replica without a key uses the pool's", () => {
    const parsed = CheckedModelsConfig.parse(
      entry({ apiKeyEnv: "POOL_KEY", replicas: [{ baseUrlEnv: "NODE_A", apiKeyEnv: "KEY_A", weight: 2 }, { baseUrl: "http://b:8000/v1/" }, { baseUrlEnv: "NODE_C" }] }),
    );
    const upstream = parsed.models[0]!.upstream!;
    resolveUpstream(upstream, { NODE_A: "http://a:8000/v1", KEY_A: "ka", POOL_KEY: "kp" });
    const { replicas, unresolved } = upstreamReplicas(upstream);
    expect(replicas).toEqual([
      { baseUrl: "http://a:8000/v1", apiKey: "ka", weight: 2, maxInFlight: undefined },
      { baseUrl: "http://b:8000/v1", apiKey: "kp", weight: 1, maxInFlight: undefined },
    ]);
    expect(unresolved).toEqual(["NODE_C is not set"]);
  });
});
