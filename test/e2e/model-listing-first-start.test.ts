import { linkSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { readGgufFileInfo, resolveChatWrapper } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTemplate } from "../../src/engines/llama/ChatSyntax.js";
import { QWEN25_HEADER_SHAPE, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { CHATML_PLAIN_TEMPLATE } from "../../src/fixtures/gguf/chatTemplates.js";
import { startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { listModelFileFeatures } from "../../src/store/modelFileFeatures.js";

/**
 * The first GET /models of a node that has never run: ten GGUFs with Qwen2.5's real
 * vocabulary, none loaded, an empty store. The listing reads each header without its
 * vocabulary and answers the known templates without analysing them; what it lists must be
 * what node-llama-cpp's full analysis of each file says.
 */

const dir = mkdtempSync(join(tmpdir(), "hearth-first-start-"));
/** Two real-vocabulary files, five names each: the feature cache keys on the path, so each name is its own file. */
const sources = {
  tools: { file: join(dir, "source-tools.gguf"), chatTemplate: undefined },
  plain: { file: join(dir, "source-plain.gguf"), chatTemplate: CHATML_PLAIN_TEMPLATE },
};
const models = Array.from({ length: 10 }, (_, i) => {
  const source = i % 2 === 0 ? "tools" : "plain";
  return { id: `qwen-${source}-${i}`, source, file: join(dir, `qwen2.5-0.5b-${source}-${i}.gguf`) } as const;
});

type Capabilities = { supportsFunctionCalling: boolean; supportsReasoning: boolean; supportsReasoningEffort: boolean; reasoningEffortOptions?: string[] };
let server: TestServer;
const truth: Record<string, ReturnType<typeof describeTemplate>> = {};

beforeAll(async () => {
  for (const [name, { file, chatTemplate }] of Object.entries(sources)) {
    await writeChatModel(file, { ...QWEN25_HEADER_SHAPE, ...(chatTemplate ? { chatTemplate } : {}) });
    // The full path GET /models took before: the whole header, then the template analysis.
    const fileInfo = await readGgufFileInfo(file, { readTensorInfo: false });
    const wrapper = resolveChatWrapper({ fileInfo, filename: basename(file), warningLogs: false })!;
    truth[name] = describeTemplate(wrapper, fileInfo.metadata.tokenizer?.chat_template as string);
  }
  for (const model of models) linkSync(sources[model.source].file, model.file);
  server = await startTestServer({ models: models.map(({ id, file }) => tinyChatEntry({ id, name: id, file })) });
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the first model listing of a new node", () => {
  it("lists every unloaded model's own chat features, and keeps them for the next start", async () => {
    expect(listModelFileFeatures(server.db)).toHaveLength(0);
    const res = await fetch(`${server.baseUrl}/models?type=text`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { id: string; model_spec: { capabilities: Capabilities } }[] };
    expect(body.data.map((m) => m.id).sort()).toEqual(models.map((m) => m.id).sort());

    // The two files differ in every listed feature, so a listing that mixed them up would show it.
    expect(truth.tools).toEqual({ functionCalling: true, reasoning: true, reasoningToggle: true });
    expect(truth.plain).toEqual({ functionCalling: false, reasoning: false, reasoningToggle: false });
    for (const model of models) {
      const expected = truth[model.source]!;
      const listed = body.data.find((m) => m.id === model.id)!.model_spec.capabilities;
      expect({ id: model.id, functionCalling: listed.supportsFunctionCalling, reasoning: listed.supportsReasoning, effort: listed.supportsReasoningEffort }).toEqual({
        id: model.id,
        functionCalling: expected.functionCalling,
        reasoning: expected.reasoning,
        effort: expected.reasoning,
      });
      expect(listed.reasoningEffortOptions?.includes("none") ?? false).toBe(expected.reasoningToggle);
    }
    expect(server.models.status().models.filter((m) => m.state !== "unloaded")).toEqual([]);
    expect(listModelFileFeatures(server.db)).toHaveLength(models.length);
  });
});
