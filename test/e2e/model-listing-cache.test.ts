import { copyFileSync, mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startTestServer, tinyChatEntry, tinyChatPath, type TestServer } from "../helpers/testServer.js";
import { listModelFileFeatures } from "../../src/store/modelFileFeatures.js";

/**
 * GET /models reads an unloaded GGUF's chat features from its template, about a second per
 * file; the answer is kept in the store per file (path, size, modification time), so a
 * restarted node lists at once, and a changed file is read again.
 */

const dir = mkdtempSync(join(tmpdir(), "hearth-listing-"));
const dataDir = join(dir, "data");
const file = join(dir, "chat.gguf");
copyFileSync(tinyChatPath(), file);
const entry = () => tinyChatEntry({ file });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function listedFunctionCalling(server: TestServer): Promise<boolean> {
  const res = await fetch(`${server.baseUrl}/models?type=text`);
  const body = (await res.json()) as { data: { id: string; model_spec: { capabilities: { supportsFunctionCalling: boolean } } }[] };
  return body.data.find((m) => m.id === "tiny-chat")!.model_spec.capabilities.supportsFunctionCalling;
}

async function withServer<T>(run: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startTestServer({ models: [entry()], dataDir });
  try {
    return await run(server);
  } finally {
    await server.stop();
  }
}

describe("the model listing's feature cache", () => {
  it("answers a restarted node from the store, and reads a changed file again", async () => {
    const truth = await withServer(async (server) => {
      const listed = await listedFunctionCalling(server);
      const rows = listModelFileFeatures(server.db) as { path: string; backend: string; features: { functionCalling: boolean } }[];
      expect(rows).toMatchObject([{ path: file, backend: "llama", features: expect.any(Object) }]);
      expect(rows[0]!.features.functionCalling).toBe(listed);
      // Mark the cached answer so the next node shows whether it read the cache or the file: a
      // deliberate edit of the cache behind the store's back, so raw SQL.
      const marked = { ...rows[0]!.features, functionCalling: !listed };
      server.db.prepare("UPDATE model_file_features SET features = ?").run(JSON.stringify(marked));
      return listed;
    });

    // The same file: the restarted node lists what the store holds, without reading the template.
    expect(await withServer(listedFunctionCalling)).toBe(!truth);

    // The file changes (here its modification time): the cached answer no longer applies.
    const later = new Date(Date.now() + 60_000);
    utimesSync(file, later, later);
    expect(await withServer(listedFunctionCalling)).toBe(truth);
  });
});
