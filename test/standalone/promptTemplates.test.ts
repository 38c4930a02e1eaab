import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { toJsonSchemaSubset } from "../../src/engines/jsonSchemaSubset.js";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import type { ChatMessage, FunctionDefinition } from "../../src/engines/types.js";
import { DEMO_FIXTURES } from "../../src/fixtures/demoModels.js";
import { fixturesDir } from "../helpers/testServer.js";

/**
 * Prompt snapshots: a fixed conversation rendered through each demo GGUF chat model's own
 * template, the way Hearth renders every chat request (LlamaChatEngine.renderPrompt: the
 * messages as node-llama-cpp chat history, the wrapper resolved from the GGUF's template).
 * A change to a demo template, to the message translation or to node-llama-cpp's wrapper
 * resolution changes a committed file under __snapshots__/prompts/ and fails here; review the
 * diff and update with `npx vitest run -u test/standalone/promptTemplates.test.ts`.
 */

const conversation: ChatMessage[] = [
  { role: "system", content: "You are Hearth's test assistant." },
  { role: "user", content: "What is 2 + 3? Use the calculator." },
  // The earlier turn's thought: templates that show earlier thinking render it, others drop it.
  { role: "assistant", content: null, reasoning: "The user wants a sum; call add.", toolCalls: [{ id: "call_1", name: "add", arguments: '{"a":2,"b":3}' }] },
  { role: "tool", content: '{"sum":5}', toolCallId: "call_1" },
  { role: "assistant", content: "2 + 3 = 5.", reasoning: null },
  { role: "user", content: "Thanks! And 5 + 5?" },
];

const addParameters = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] };
const functions: FunctionDefinition[] = [{ name: "add", description: "Adds two numbers", parametersSchema: addParameters, parameters: toJsonSchemaSubset(addParameters) }];

const CHAT_MODELS = ["tiny-chat", "tiny-reasoning", "tiny-coder"] as const satisfies readonly (keyof typeof DEMO_FIXTURES)[];
const engines: LlamaChatEngine[] = [];
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
});

async function load(name: (typeof CHAT_MODELS)[number]): Promise<LlamaChatEngine> {
  const entry = ModelEntry.parse({
    id: name,
    type: "text",
    backend: "llama",
    file: join(fixturesDir(), DEMO_FIXTURES[name].path),
    llama: { contextSize: 1024, sequences: 1, threads: 1, gpuLayers: 0 },
  });
  const engine = await LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: false });
  engines.push(engine);
  return engine;
}

describe.each(CHAT_MODELS)("%s prompt", (name) => {
  it("renders the conversation with tools, a tool call and its result", async () => {
    const engine = await load(name);
    const withTools = engine.renderPrompt(conversation, functions);
    await expect(withTools.text).toMatchFileSnapshot(`__snapshots__/prompts/${name}.tools.txt`);
    const plain = engine.renderPrompt(conversation.filter((m) => m.role === "system" || m.role === "user" || (m.role === "assistant" && m.content)));
    await expect(plain.text).toMatchFileSnapshot(`__snapshots__/prompts/${name}.plain.txt`);
    // What Hearth reads from the template (tool calls, a <think> block and its enable_thinking switch) and where generation stops.
    const { functionCalling, reasoning, reasoningToggle } = engine.features;
    expect({ functionCalling, reasoning, reasoningToggle, stopStrings: withTools.stopStrings, stopTokens: withTools.stopTokens.size }).toMatchSnapshot();
  });
});
