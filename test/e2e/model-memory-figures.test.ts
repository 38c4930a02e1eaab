import { copyFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { GgufInsights } from "node-llama-cpp";
import { afterEach, describe, expect, it, vi } from "vitest";
import { testTempDir } from "../helpers/tempDir.js";
import { startTestServer, tinyChatEntry, tinyChatPath, type TestServer } from "../helpers/testServer.js";

/**
 * A GGUF model's memory figure (its estimate, made by simulating the load in llama.cpp, or a
 * loaded model's own report) is kept in the store per file (path, size, modification time) and
 * per the settings it depends on: a restarted node's admin listing reads it instead of simulating
 * the load again, and a changed file or changed settings are figured again.
 */

afterEach(() => vi.restoreAllMocks());

/** A data directory and a copy of the tiny chat model of the test's own (removed when it finishes). */
function scratch(): { dataDir: string; file: string } {
  const dir = testTempDir("hearth-memory-figures-");
  const file = join(dir, "chat.gguf");
  copyFileSync(tinyChatPath(), file);
  return { dataDir: join(dir, "data"), file };
}

/** Counts node-llama-cpp's simulated loads (its V2 estimates), as memorySafetyChecks.test.ts does. */
const simulations = () => {
  const model = vi.spyOn(GgufInsights.prototype, "estimateModelResourceRequirementsV2");
  const context = vi.spyOn(GgufInsights.prototype, "estimateContextResourceRequirementsV2");
  return () => model.mock.calls.length + context.mock.calls.length;
};

type Memory = { ramBytes: number; vramBytes: number } | null;

async function listedMemory(server: TestServer): Promise<Memory> {
  const res = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { id: string; memory: Memory }[] };
  return body.data.find((m) => m.id === "tiny-chat")!.memory;
}

async function withServer<T>({ dataDir, file }: { dataDir: string; file: string }, llama: Record<string, unknown>, run: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startTestServer({ models: [tinyChatEntry({ file, llama: { contextSize: 2048, sequences: 4, threads: 1, gpuLayers: 0, ...llama } })], dataDir });
  try {
    return await run(server);
  } finally {
    await server.stop();
  }
}

const rows = (server: TestServer) =>
  server.db.prepare("SELECT settings, ram_bytes AS ramBytes FROM model_memory_figures ORDER BY settings").all() as {
    settings: string;
    ramBytes: number;
  }[];

describe("the store's memory figures", () => {
  it("a restarted node lists a kept figure without simulating; a changed file or changed settings are figured again", async () => {
    const scene = scratch();
    // First start: the model is not loaded, so the listing estimates it by simulation, and keeps it.
    const count = simulations();
    const estimated = await withServer(scene, {}, async (server) => {
      const memory = await listedMemory(server);
      expect(memory!.ramBytes).toBeGreaterThan(1_000_000);
      expect(count()).toBeGreaterThanOrEqual(2);
      expect(rows(server)).toEqual([{ settings: expect.stringContaining('"contextSize":2048'), ramBytes: memory!.ramBytes }]);
      // Mark the kept figure so the next node shows whether it read the store or simulated: a
      // deliberate edit behind the store's back, so raw SQL.
      server.db.prepare("UPDATE model_memory_figures SET ram_bytes = ram_bytes + 1").run();
      return memory!;
    });

    // The same file and settings: the restarted node lists the kept figure and simulates nothing.
    const before = count();
    expect(await withServer(scene, {}, listedMemory)).toEqual({ ...estimated, ramBytes: estimated.ramBytes + 1 });
    expect(count()).toBe(before);

    // Other settings (a longer context) are another figure.
    const longer = await withServer(scene, { contextSize: 4096 }, async (server) => {
      const memory = await listedMemory(server);
      expect(rows(server)).toHaveLength(2);
      return memory!;
    });
    expect(longer.ramBytes).toBeGreaterThan(estimated.ramBytes);
    expect(count()).toBeGreaterThan(before);

    // The file changes (here its modification time): the kept figure no longer applies.
    const later = new Date(Date.now() + 60_000);
    utimesSync(scene.file, later, later);
    const afterChange = count();
    expect(await withServer(scene, {}, listedMemory)).toEqual(estimated);
    expect(count()).toBeGreaterThan(afterChange);
  });

  it("a loaded model's own report is kept, and the next start lists it without simulating", async () => {
    const scene = scratch();
    const reported = await withServer(scene, { flashAttention: true, contextSize: 1024 }, async (server) => {
      const loaded = await server.models.load("tiny-chat");
      expect(loaded.state).toBe("loaded");
      const inUse = server.models.loadedEngine("tiny-chat")!.memoryInUse!();
      await expect.poll(() => rows(server).find((row) => row.settings.includes('"contextSize":1024'))?.ramBytes).toBe(inUse.ramBytes);
      return inUse;
    });
    const count = simulations();
    expect(await withServer(scene, { flashAttention: true, contextSize: 1024 }, listedMemory)).toEqual(reported);
    expect(count()).toBe(0);
  });
});
