import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { expect, it, vi } from "vitest";
import { exited, hearth, hearthServe, writeTinyChatRegistry } from "../helpers/cli.js";
import { tinySdPath } from "../helpers/mediaModels.js";
import { fixturesDir } from "../helpers/testServer.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * What a chat-only node carries in memory. The CLI runs the compiled copy of src/ (dist/), not
 * tsx, and the wallet libraries (viem, @solana/kit, the curves) and sharp load with their first
 * use: together about 110 MB of resident memory a node serving only a GGUF never needs. A static
 * import of one of them anywhere on the start path fails this test.
 */
it("a started chat node that has answered a chat request has loaded neither tsx, the wallet libraries nor sharp", async () => {
  const dir = testTempDir("hearth-footprint-");
  const registry = writeTinyChatRegistry(dir);
  const packagesFile = join(dir, "packages.txt");
  const recorder = pathToFileURL(join(import.meta.dirname, "..", "helpers", "recordPackages.mjs")).href;
  const dataDir = join(dir, "data");
  const { stdout } = await hearth(["keys", "create", "--name", "footprint", "--usd", "1", "--data-dir", dataDir]);
  const key = stdout.trim().split("\n").at(-1)!;
  const server = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry], {
    NODE_OPTIONS: `--import=${recorder}`,
    HEARTH_RECORD_PACKAGES: packagesFile,
  });
  try {
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
    });
    expect(response.status).toBe(200);
    // It runs no ffmpeg, so it started no process spawner for it.
    expect(spawnerChildren(server.child.pid!)).toEqual([]);
  } finally {
    server.child.kill("SIGTERM");
    await exited(server.child);
  }
  expect(existsSync(packagesFile)).toBe(true);
  const loaded = new Set(readFileSync(packagesFile, "utf8").trim().split("\n"));
  // The recorder saw the engine and the web stack: it works, so what it did not see was not loaded.
  expect(loaded).toContain("node-llama-cpp");
  expect(loaded).toContain("express");
  for (const absent of ["tsx", "viem", "@solana/kit", "@solana-program/token", "@noble/curves", "sharp", "@huggingface/transformers", "onnxruntime-node"]) {
    expect(loaded, absent).not.toContain(absent);
  }
});

/**
 * The other side: a node whose registry has a model evaluated with transformers.js on the event
 * loop imports it once it listens, before any request, so no request waits behind the import
 * (about 0.2 s of module evaluation) at the model's first load; one with image models imports
 * sharp (about 90 ms); one whose models run ffmpeg starts its process spawner.
 */
it("a started node with a transformers.js embedding model, an image model and a speech model imports transformers.js and sharp and starts the process spawner before any request", async () => {
  const dir = testTempDir("hearth-footprint-");
  const registry = join(dir, "models.config.json");
  const models = [
    { id: "tiny-embedding", type: "embedding", backend: "transformers", file: join(fixturesDir(), "tiny-embedding") },
    { id: "tiny-sd", type: "image", backend: "onnx-diffusion", file: tinySdPath() },
    { id: "tts-kokoro", type: "tts", backend: "kokoro", file: join(fixturesDir(), "tiny-kokoro") },
  ];
  writeFileSync(registry, JSON.stringify({ models }));
  const packagesFile = join(dir, "packages.txt");
  const recorder = pathToFileURL(join(import.meta.dirname, "..", "helpers", "recordPackages.mjs")).href;
  const server = await hearthServe(["--port", "0", "--data-dir", join(dir, "data"), "--config", registry], {
    NODE_OPTIONS: `--import=${recorder}`,
    HEARTH_RECORD_PACKAGES: packagesFile,
  });
  try {
    // No request is sent: only the start can have imported it.
    await vi.waitFor(() => expect(readFileSync(packagesFile, "utf8").split("\n")).toEqual(expect.arrayContaining(["@huggingface/transformers", "sharp"])), {
      timeout: 30_000,
      interval: 100,
    });
    expect(spawnerChildren(server.child.pid!)).toHaveLength(1);
  } finally {
    server.child.kill("SIGTERM");
    await exited(server.child);
  }
});

/** The process spawners (src/media/spawnerProcess) a node started. */
function spawnerChildren(pid: number): number[] {
  const found = spawnSync("pgrep", ["-P", String(pid), "-f", "spawnerProcess"], { encoding: "utf8" });
  return found.stdout.trim().split("\n").filter(Boolean).map(Number);
}
