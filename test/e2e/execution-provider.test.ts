import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { missingProviderLibraries, onnxRuntimeBinaryDir } from "../../src/engines/onnx/providerAvailability.js";
import { resolveExecutionProviders } from "../../src/engines/onnx/resolveExecutionProviders.js";
import { tinyEmbeddingEntry, tinyImageEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, tinyKokoroEntry, tinyVitsEntry, tinyWhisperEntry, type TestServer } from "../helpers/testServer.js";

/**
 * GET /admin/models says where each loaded ONNX model runs and why, and the load logs it once,
 * on a server that looks for a GPU as `hearth serve` does. On a machine without the CUDA
 * provider library (the offline install) "auto" is the CPU with the way to get CUDA.
 */

const cudaInstalled = missingProviderLibraries("cuda", onnxRuntimeBinaryDir()!).length === 0;

let captured = "";
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    captured += chunk.toString();
    done();
  },
});
const logLines = () =>
  captured
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    gpu: "auto",
    logger: createLogger("info", { destination: sink }),
    models: [
      tinyVitsEntry(),
      tinyEmbeddingEntry({ embedding: { threads: 1, executionProviders: ["cpu"] } }),
      tinyVitsEntry({ id: "tts-vits-cuda-only", onnx: { threads: 1, executionProviders: ["cuda"] } }),
      tinyKokoroEntry(),
      tinyWhisperEntry(),
      tinyImageEntry(),
    ],
  });
});
afterAll(() => server?.stop());

async function adminModels(): Promise<any[]> {
  const res = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: any[] }).data;
}
const recordOf = async (id: string) => (await adminModels()).find((m) => m.id === id);

describe("GET /admin/models: execution providers", () => {
  it("shows none for a model that is not loaded", async () => {
    for (const model of await adminModels()) expect(model.executionProvider, model.id).toBeNull();
  });

  it('shows where "auto" put a loaded model and why, and logs it once', async () => {
    const loaded = await post(server, "/admin/models/tts-vits/load", {});
    expect(loaded.status).toBe(200);
    const expected = await resolveExecutionProviders("auto", { gpu: "auto" });
    expect(((await loaded.json()) as any).data.executionProvider).toEqual(expected);
    const record = await recordOf("tts-vits");
    expect(record.state).toBe("loaded");
    expect(record.executionProvider).toEqual(expected);
    if (!cudaInstalled) {
      expect(record.executionProvider).toMatchObject({ name: "cpu", providers: ["cpu"], fellBack: false });
      expect(record.executionProvider.reason).toMatch(/^auto: the CUDA provider library is not installed \(.*npm run onnx:cuda/);
    }
    const lines = logLines().filter((line) => line.executionProvider !== undefined);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: expected.fellBack ? 40 : 30,
      models: ["tts-vits"],
      executionProvider: expected.name,
      providers: expected.providers,
      reason: expected.reason,
    });
    expect(lines[0]!.msg).toBe(`onnxruntime runs tts-vits on ${expected.name}: ${expected.reason}`);
  });

  it("shows an explicit list as configured (transformers.js embeddings in a worker thread)", async () => {
    expect((await post(server, "/admin/models/tiny-embedding/load", {})).status).toBe(200);
    expect((await recordOf("tiny-embedding")).executionProvider).toEqual({ name: "cpu", providers: ["cpu"], reason: 'configured ["cpu"]', fellBack: false });
    const embedded = await post(server, "/embeddings", { model: "tiny-embedding", input: "runs on the CPU" });
    expect(embedded.status).toBe(200);
  });

  it("covers every onnxruntime engine: Kokoro with its speaker encoder, Whisper, the diffusion worker pool", async () => {
    const expected = await resolveExecutionProviders("auto", { gpu: "auto" });
    for (const id of ["tts-kokoro", "tiny-whisper", "tiny-sd"]) {
      expect((await post(server, `/admin/models/${id}/load`, {})).status, id).toBe(200);
      expect((await recordOf(id)).executionProvider, id).toEqual(expected);
    }
    const image = await post(server, "/image/generate", { model: "tiny-sd", prompt: "a red square", width: 64, height: 64, steps: 1 });
    expect(image.status).toBe(200);
    expect(image.headers.get("x-service-model-router")).toBe(`onnxruntime/${expected.name}`);
  });

  it("forgets it when the model unloads", async () => {
    expect((await post(server, "/admin/models/tts-vits/unload", {})).status).toBe(200);
    expect((await recordOf("tts-vits")).executionProvider).toBeNull();
  });

  it.runIf(!cudaInstalled)('fails a ["cuda"]-only model where CUDA is missing, saying why', async () => {
    const res = await post(server, "/admin/models/tts-vits-cuda-only/load", {});
    expect(res.status).toBe(503);
    const record = await recordOf("tts-vits-cuda-only");
    expect(record).toMatchObject({ state: "failed", executionProvider: null });
    expect(record.error).toContain('none of the execution providers ["cuda"] works here (cuda: the CUDA provider library is not installed');
    expect(record.error).toContain('add "cpu" to the list to fall back to the CPU, or set "auto"');
  });
});
