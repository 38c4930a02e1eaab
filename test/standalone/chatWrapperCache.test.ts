import { utimesSync } from "node:fs";
import { join } from "node:path";
import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  type ChatWrapper,
  getLlama,
  JinjaTemplateChatWrapper,
  LlamaLogLevel,
  type LlamaModel,
  QwenChatWrapper,
  resolveChatWrapper,
} from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { chatWrapperFor } from "../../src/engines/llama/chatWrapperCache.js";
import { TINY_CHAT, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { testTempDir } from "../helpers/tempDir.js";
import { tinyChatPath } from "../helpers/testServer.js";

const history: ChatHistoryItem[] = [
  { type: "system", text: "You are terse." },
  { type: "user", text: "What is the weather in Oslo?" },
  { type: "model", response: [] },
];
const functions: ChatModelFunctions = { weather: { description: "The weather in a city", params: { type: "object", properties: { city: { type: "string" } } } } };
/** What a wrapper makes of a conversation, with and without tools. */
const rendered = (wrapper: ChatWrapper) =>
  [undefined, functions].map((availableFunctions) => wrapper.generateContextState({ chatHistory: history, availableFunctions }).contextText.toJSON());

async function loadModel(path: string): Promise<LlamaModel> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  return llama.loadModel({ modelPath: path });
}

describe("chat wrappers resolved once per model file", () => {
  it("a template no specialized wrapper renders (the demo's, on llama) gets the Jinja wrapper the full resolution gets, without the resolution", async () => {
    const model = await loadModel(tinyChatPath());
    try {
      const wrapper = chatWrapperFor(tinyChatPath(), model);
      const full = resolveChatWrapper(model);
      expect(wrapper).toBeInstanceOf(JinjaTemplateChatWrapper);
      expect(full).toBeInstanceOf(JinjaTemplateChatWrapper);
      expect(rendered(wrapper)).toEqual(rendered(full));
      // Built for this model: a Jinja wrapper holds its tokenizer, so a reload gets a new one.
      expect(chatWrapperFor(tinyChatPath(), model)).not.toBe(wrapper);
    } finally {
      await model.dispose();
    }
  });

  it("a specialized wrapper serves every reload of its file, and a changed file is resolved anew", async () => {
    const path = join(testTempDir("hearth-wrapper-"), "qwen-shaped.gguf");
    await writeChatModel(path, { ...TINY_CHAT, architecture: "qwen2" });
    const first = await loadModel(path);
    const wrapper = chatWrapperFor(path, first);
    expect(wrapper).toBeInstanceOf(QwenChatWrapper);
    expect(rendered(wrapper)).toEqual(rendered(resolveChatWrapper(first)));
    await first.dispose();

    const reloaded = await loadModel(path);
    expect(chatWrapperFor(path, reloaded)).toBe(wrapper);
    utimesSync(path, new Date(), new Date(Date.now() + 5_000));
    const changed = chatWrapperFor(path, reloaded);
    expect(changed).not.toBe(wrapper);
    expect(changed).toBeInstanceOf(QwenChatWrapper);
    await reloaded.dispose();
  });
});
