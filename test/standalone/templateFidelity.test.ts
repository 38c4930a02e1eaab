import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { toJsonSchemaSubset } from "../../src/engines/jsonSchemaSubset.js";
import { JinjaTemplateChatWrapper, QwenChatWrapper } from "node-llama-cpp";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import type { ChatMessage, FunctionDefinition } from "../../src/engines/types.js";
import { DEMO_FIXTURES } from "../../src/fixtures/demoModels.js";
import { TINY_CHAT, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { CHATML_PLAIN_TEMPLATE, CHATML_THINKING_TEMPLATE, CHATML_TOOLS_TEMPLATE } from "../../src/fixtures/gguf/chatTemplates.js";
import { templateDefaultSystemPrompt } from "../../src/engines/llama/templateFidelity.js";
import { fixturesDir } from "../helpers/testServer.js";

/**
 * Hearth renders prompts through node-llama-cpp's chat wrappers, which stand in for a GGUF's
 * own Jinja template where they judge it equivalent. The reference here is the template itself,
 * rendered by @huggingface/jinja as transformers does (and as llama-server's /apply-template
 * renders it): the same messages must give the same prompt text, with or without a system
 * message, with or without tools.
 *
 * The demo models are of the llama architecture, whose template node-llama-cpp renders itself.
 * Real Qwen models (qwen2, qwen3) get node-llama-cpp's Qwen wrapper instead, which leaves out
 * the default system message Qwen2.5's template writes: "tiny-qwen" is the tiny chat model on
 * the qwen2 architecture, so that path runs here too.
 */

const CHAT_MODELS = ["tiny-chat", "tiny-reasoning", "tiny-coder", "tiny-qwen"] as const;
type ChatModelName = (typeof CHAT_MODELS)[number];
const EXPECTED_WRAPPER: Record<ChatModelName, string> = { "tiny-chat": "JinjaTemplate", "tiny-reasoning": "JinjaTemplate", "tiny-coder": "JinjaTemplate", "tiny-qwen": "Qwen" };

const qwenDir = mkdtempSync(join(tmpdir(), "hearth-tiny-qwen-"));
const qwenFile = join(qwenDir, "tiny-qwen.gguf");
beforeAll(async () => {
  await writeChatModel(qwenFile, { ...TINY_CHAT, architecture: "qwen2", name: "Hearth Tiny Qwen", seed: 5 });
});

const weatherParameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const functions: FunctionDefinition[] = [
  { name: "get_weather", description: "The weather in a city", parametersSchema: weatherParameters, parameters: toJsonSchemaSubset(weatherParameters) },
];
const referenceTools = functions.map((f) => ({ type: "function", function: { name: f.name, description: f.description, parameters: f.parametersSchema } }));

const conversations: { name: string; messages: ChatMessage[] }[] = [
  { name: "a user message alone", messages: [{ role: "user", content: "What is the weather in Paris?" }] },
  {
    name: "a system message and a user message",
    messages: [
      { role: "system", content: "Answer in one sentence." },
      { role: "user", content: "What is the weather in Paris?" },
    ],
  },
  {
    name: "a tool call and its result",
    messages: [
      { role: "user", content: "What is the weather in Paris?" },
      // The thought of the calling turn: these templates do not show it.
      { role: "assistant", content: null, reasoning: "The user wants the weather.", toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }] },
      // As Python's json.dumps writes it.
      { role: "tool", content: '{"sky": "clear", "temperature": 21}', toolCallId: "call_1" },
    ],
  },
  {
    name: "two turns without a system message",
    messages: [
      { role: "user", content: "Hello." },
      { role: "assistant", content: "Hello! How can I help?", reasoning: null },
      { role: "user", content: "What is the weather in Paris?" },
    ],
  },
];

const engines = new Map<string, LlamaChatEngine>();
afterAll(async () => {
  for (const engine of engines.values()) await engine.dispose();
  rmSync(qwenDir, { recursive: true, force: true });
});

async function load(name: ChatModelName): Promise<LlamaChatEngine> {
  const loaded = engines.get(name);
  if (loaded) return loaded;
  const entry = ModelEntry.parse({
    id: name,
    type: "text",
    backend: "llama",
    file: name === "tiny-qwen" ? qwenFile : join(fixturesDir(), DEMO_FIXTURES[name].path),
    llama: { contextSize: 1024, sequences: 1, threads: 1, gpuLayers: 0 },
  });
  const engine = await LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: false });
  engines.set(name, engine);
  return engine;
}

function referencePrompt(engine: LlamaChatEngine, messages: ChatMessage[], withTools: boolean): string {
  const template = new Template(engine.templateSource!);
  return template.render({
    messages: messages.map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.role === "assistant" && m.toolCalls?.length
        ? { tool_calls: m.toolCalls.map((call) => ({ type: "function", id: call.id, function: { name: call.name, arguments: JSON.parse(call.arguments) } })) }
        : {}),
    })),
    ...(withTools ? { tools: referenceTools } : {}),
    add_generation_prompt: true,
    bos_token: "",
    eos_token: "",
  });
}

describe.each(CHAT_MODELS)("%s: the prompt is the model's own template's", (name) => {
  it("is rendered by the wrapper node-llama-cpp resolves for its architecture", async () => {
    expect((await load(name)).chatWrapperName).toBe(EXPECTED_WRAPPER[name]);
  });

  for (const { name: conversationName, messages } of conversations) {
    for (const withTools of [false, true]) {
      it(`${conversationName}${withTools ? ", with tools" : ""}`, async () => {
        const engine = await load(name);
        // Every demo template lists tools in its system turn (src/fixtures/gguf/chatTemplates.ts).
        expect(engine.features.functionCalling).toBe(true);
        const rendered = engine.renderPrompt(messages, withTools ? functions : undefined);
        expect(rendered.text).toBe(referencePrompt(engine, messages, withTools));
      });
    }
  }
});

describe("a tool result in compact JSON", () => {
  const messages: ChatMessage[] = [
    { role: "user", content: "What is the weather in Paris?" },
    { role: "assistant", content: null, reasoning: null, toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }] },
    { role: "tool", content: '{"sky":"clear","temperature":21}', toolCallId: "call_1" },
  ];

  it("reaches a Qwen model as the client sent it", async () => {
    const engine = await load("tiny-qwen");
    expect(engine.renderPrompt(messages, functions).text).toBe(referencePrompt(engine, messages, true));
  });

  it("reaches the other models re-spaced as Python's json.dumps writes it (node-llama-cpp's wrappers print parsed results)", async () => {
    for (const name of ["tiny-chat", "tiny-reasoning", "tiny-coder"] as const) {
      const engine = await load(name);
      const respaced = messages.map((m) => (m.role === "tool" ? { ...m, content: '{"sky": "clear", "temperature": 21}' } : m));
      expect(engine.renderPrompt(messages, functions).text).toBe(referencePrompt(engine, respaced, true));
    }
  });
});

describe("the default system message read off a template", () => {
  it("is what a ChatML template with tools writes when a conversation has none", () => {
    expect(templateDefaultSystemPrompt(new QwenChatWrapper(), CHATML_TOOLS_TEMPLATE)).toBe("You are a helpful assistant.");
  });

  it("is none for templates without one, for no template, and where the template renders itself", () => {
    expect(templateDefaultSystemPrompt(new QwenChatWrapper(), CHATML_PLAIN_TEMPLATE)).toBeNull();
    expect(templateDefaultSystemPrompt(new QwenChatWrapper(), undefined)).toBeNull();
    expect(templateDefaultSystemPrompt(new JinjaTemplateChatWrapper({ template: CHATML_TOOLS_TEMPLATE }), CHATML_TOOLS_TEMPLATE)).toBeNull();
  });

  it("is none where the wrapper given the candidate text would still not render what the template does", () => {
    // Told to discourage thoughts, the Qwen wrapper opens the answer with an empty <think> block, which this template does not.
    expect(templateDefaultSystemPrompt(new QwenChatWrapper({ thoughts: "discourage" }), CHATML_THINKING_TEMPLATE)).toBeNull();
  });
});
