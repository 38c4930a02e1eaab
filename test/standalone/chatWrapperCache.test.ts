import { copyFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  type ChatWrapper,
  GemmaChatWrapper,
  getLlama,
  JinjaTemplateChatWrapper,
  LlamaLogLevel,
  type LlamaModel,
  QwenChatWrapper,
  resolveChatWrapper,
} from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { llamaBackend } from "../../src/engines/backends/llama.js";
import { chatWrapperFor, chatWrapperKindEarly, chatWrapperResolution, resolveChatWrapperKinds } from "../../src/engines/llama/chatWrapperCache.js";
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

/** The tiny chat model with `template` as its chat template, in a fresh directory. */
async function withTemplate(name: string, template: string): Promise<string> {
  const path = join(testTempDir("hearth-wrapper-"), `${name}.gguf`);
  await writeChatModel(path, { ...TINY_CHAT, chatTemplate: template });
  return path;
}

async function loadModel(path: string): Promise<LlamaModel> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  return llama.loadModel({ modelPath: path });
}

describe("chat wrappers resolved once per model file", () => {
  it("a template no specialized wrapper renders (the demo's, on llama) gets the Jinja wrapper the full resolution gets, without the resolution", async () => {
    const model = await loadModel(tinyChatPath());
    try {
      const wrapper = await chatWrapperFor(tinyChatPath(), model);
      const full = resolveChatWrapper(model);
      expect(wrapper).toBeInstanceOf(JinjaTemplateChatWrapper);
      expect(full).toBeInstanceOf(JinjaTemplateChatWrapper);
      expect(rendered(wrapper)).toEqual(rendered(full));
      // Built for this model: a Jinja wrapper holds its tokenizer, so a reload gets a new one.
      expect(await chatWrapperFor(tinyChatPath(), model)).not.toBe(wrapper);
      // A template in the known-template table starts no child process.
      expect(await chatWrapperKindEarly(tinyChatPath())).toBeUndefined();
    } finally {
      await model.dispose();
    }
  });

  it("a specialized wrapper serves every reload of its file, and a changed file is resolved anew", async () => {
    const path = join(testTempDir("hearth-wrapper-"), "qwen-shaped.gguf");
    await writeChatModel(path, { ...TINY_CHAT, architecture: "qwen2" });
    const first = await loadModel(path);
    const wrapper = await chatWrapperFor(path, first);
    expect(wrapper).toBeInstanceOf(QwenChatWrapper);
    expect(rendered(wrapper)).toEqual(rendered(resolveChatWrapper(first)));
    await first.dispose();

    const reloaded = await loadModel(path);
    expect(await chatWrapperFor(path, reloaded)).toBe(wrapper);
    utimesSync(path, new Date(), new Date(Date.now() + 5_000));
    const changed = await chatWrapperFor(path, reloaded);
    expect(changed).not.toBe(wrapper);
    expect(changed).toBeInstanceOf(QwenChatWrapper);
    await reloaded.dispose();
  });

  it("a template Hearth does not know is resolved in a child process, off the event loop, to the wrapper the full resolution gives", async () => {
    // A Phi-style layout: no specialized wrapper renders it, so the answer is the Jinja wrapper
    // (the full resolution took 0.6 s of the event loop for this tiny model, up to 3.6 s for current models' templates).
    const phiStyle = await withTemplate(
      "phi-style",
      `{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}`,
    );
    const dir = testTempDir("hearth-wrapper-");
    const qwenShaped = join(dir, "qwen-shaped.gguf");
    await writeChatModel(qwenShaped, { ...TINY_CHAT, architecture: "qwen2" });
    // One child process answers each file in turn; a file it cannot read gets no answer.
    const answers = resolveChatWrapperKinds([phiStyle, join(dir, "missing.gguf"), qwenShaped]);
    expect(await answers.get(phiStyle)).toEqual({ kind: "jinjaTemplate" });
    expect(await answers.get(join(dir, "missing.gguf"))).toBeUndefined();
    // A specialized answer names the wrapper's type and the settings it was built with.
    expect(await answers.get(qwenShaped)).toMatchObject({ kind: "specialized", specialized: { type: "qwen", settings: expect.any(Object) } });

    const model = await loadModel(phiStyle);
    try {
      const wrapper = await chatWrapperFor(phiStyle, model, chatWrapperKindEarly(phiStyle));
      expect(wrapper).toBeInstanceOf(JinjaTemplateChatWrapper);
      expect(rendered(wrapper)).toEqual(rendered(resolveChatWrapper(model)));
      // Kept for the file: the next load asks no child process.
      expect(await chatWrapperKindEarly(phiStyle)).toBeUndefined();
    } finally {
      await model.dispose();
    }
  });

  it("a template a specialized wrapper renders gets that wrapper from the child process's answer, kept before the model loads", async () => {
    // Gemma 2's turn layout (no system role): node-llama-cpp's Gemma wrapper renders it.
    const gemmaStyle = await withTemplate(
      "gemma-2-style",
      `{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}{% for message in messages %}{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}`,
    );
    expect(await chatWrapperKindEarly(gemmaStyle)).toBe("specialized");
    // Built from the answer: nothing is left to resolve on this thread when the model loads.
    expect(chatWrapperResolution(gemmaStyle)).toBe("kept");
    const model = await loadModel(gemmaStyle);
    try {
      const wrapper = await chatWrapperFor(gemmaStyle, model);
      const full = resolveChatWrapper(model);
      expect(wrapper).toBeInstanceOf(GemmaChatWrapper);
      expect(wrapper.constructor).toBe(full.constructor);
      expect(rendered(wrapper)).toEqual(rendered(full));
    } finally {
      await model.dispose();
    }
  });

  it("a serving node resolves the templates it does not know when it starts, in the background", async () => {
    const unknown = await withTemplate(
      "gemma-style",
      `{% for message in messages %}{{ '<turn ' + message['role'] + '>' + message['content'] + '</turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<turn assistant>' }}{% endif %}`,
    );
    // A file of its own with the demo's template, which the known-template table answers.
    const demoCopy = join(testTempDir("hearth-wrapper-"), "demo-copy.gguf");
    copyFileSync(tinyChatPath(), demoCopy);
    const entry = (id: string, file: string) => ModelEntry.parse({ id, type: "text", backend: "llama", file, llama: { contextSize: 512, sequences: 1, threads: 1 } });
    expect(chatWrapperResolution(unknown)).toBeUndefined();
    await llamaBackend.prepare!({ gpu: false }, [entry("demo", demoCopy), entry("gemma-style", unknown)]);
    // Started by prepare, not by a load: the answer is kept before any model is loaded.
    await expect.poll(() => chatWrapperResolution(unknown), { timeout: 60_000, interval: 50 }).toBe("kept");
    // The demo's template needs no resolution: nothing was resolved or kept for its file.
    expect(chatWrapperResolution(demoCopy)).toBeUndefined();
  });
});
