import { getLlama, LlamaLogLevel, LlamaText, SpecialToken, SpecialTokensText, type LlamaModel, type Token, type Tokenizer } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenizationCache } from "../../src/engines/llama/TokenizationCache.js";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import { tinyChatPath, tinyReasoningPath } from "../helpers/testServer.js";

// The cache stands in for the tiny chat model's real tokenizer (llama.cpp's, through node-llama-cpp).
let model: LlamaModel;
// The reasoning model's vocabulary has user-defined tokens (<think>, </think>), which llama.cpp splits at even in plain text.
let reasoning: LlamaModel;
beforeAll(async () => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  model = await llama.loadModel({ modelPath: tinyChatPath() });
  reasoning = await llama.loadModel({ modelPath: tinyReasoningPath() });
});
afterAll(async () => {
  await model.dispose();
  await reasoning.dispose();
});

/** The model's tokenizer, counting the calls that reach it. */
function countingTokenizer(of: LlamaModel = model) {
  const calls: string[] = [];
  const real = of.tokenizer;
  const tokenizer = Object.assign((text: string, specialTokens?: boolean | "builtin", options?: "trimLeadingSpace") => {
    calls.push(text);
    return real(text as never, specialTokens as never, options as never);
  }, real) as Tokenizer;
  return { tokenizer, calls };
}

const system = "You are the house assistant. Answer briefly, cite the source by its title, and never invent a number. ".repeat(4);

describe("TokenizationCache: a tokenizer that remembers long pieces", () => {
  it("gives a rendered prompt exactly the tokens the model's tokenizer gives, and tokenizes a long piece once", () => {
    const { tokenizer, calls } = countingTokenizer();
    const cache = new TokenizationCache(tokenizer);
    const prompt = (question: string) =>
      LlamaText([new SpecialTokensText("<|im_start|>"), `system\n${system}`, new SpecialTokensText("<|im_end|>\n<|im_start|>"), `user\n${question}`, new SpecialToken("EOS")]);
    for (const question of ["What is a starter?", "How warm should it be?", "What is a starter?"]) {
      expect(prompt(question).tokenize(cache.tokenize)).toEqual(prompt(question).tokenize(model.tokenizer));
    }
    // The system prompt's piece reached the model once; the short questions every time.
    expect(calls.filter((text) => text === `system\n${system}`)).toHaveLength(1);
    expect(calls.filter((text) => text === "user\nWhat is a starter?")).toHaveLength(2);
  });

  it("keeps pieces apart by their options, and hands out copies", () => {
    const cache = new TokenizationCache(model.tokenizer);
    const plain = cache.tokenize(system, false);
    const trimmed = cache.tokenize(system, false, "trimLeadingSpace");
    expect(trimmed).toEqual(model.tokenizer(system, false, "trimLeadingSpace"));
    expect(cache.tokenize(system, true)).toEqual(model.tokenizer(system, true));
    expect(plain).toEqual(model.tokenizer(system, false));
    plain.push(0 as Token);
    expect(cache.tokenize(system, false)).toEqual(model.tokenizer(system, false));
    expect(cache.size().pieces).toBe(3);
  });

  it("forgets the least recently used pieces past its size, and keeps nothing short", () => {
    const cache = new TokenizationCache(model.tokenizer, { minChars: 100, maxChars: 1000 });
    const piece = (n: number) => `${n} `.repeat(150).slice(0, 300);
    cache.tokenize("short text", false);
    expect(cache.size().pieces).toBe(0);
    for (let n = 0; n < 3; n++) cache.tokenize(piece(n), false);
    cache.tokenize(piece(0), false); // piece 0 used again: piece 1 is now the oldest
    cache.tokenize(piece(3), false);
    expect(cache.size()).toEqual({ pieces: 3, chars: 900 });
    const { tokenizer, calls } = countingTokenizer();
    const probe = new TokenizationCache(tokenizer, { minChars: 100, maxChars: 1000 });
    for (const n of [0, 1, 2, 0, 3, 0, 1]) probe.tokenize(piece(n), false);
    // 1 was evicted by 3 and tokenized again; 0 stayed.
    expect(calls.filter((text) => text === piece(0))).toHaveLength(1);
    expect(calls.filter((text) => text === piece(1))).toHaveLength(2);
  });

  it("tokenizes a long special-token text in pieces cut after special tokens, with exactly the tokens it has whole", () => {
    const { tokenizer, calls } = countingTokenizer();
    const cache = new TokenizationCache(tokenizer);
    const turn = (i: number) => `<|im_start|>user\n${i % 5 === 0 ? "a short question" : ""}<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n`;
    const sample = Array.from({ length: 50 }, (_, i) => turn(i)).join("");
    expect(cache.allowCuts("special", ["<|im_start|>", "<|im_end|>"], sample)).toBe(true);
    // The scaffolding of 3,000 turns: about 190 KB, past the size tokenized whole.
    const scaffolding = Array.from({ length: 3000 }, (_, i) => turn(i)).join("");
    calls.length = 0;
    expect(cache.tokenize(scaffolding, true)).toEqual(model.tokenizer(scaffolding, true));
    expect(calls.length).toBeGreaterThan(50);
    expect(calls.join("")).toBe(scaffolding);
    expect(calls.every((piece) => piece.endsWith("<|im_start|>") || piece.endsWith("<|im_end|>") || piece === calls.at(-1))).toBe(true);
    // Short special text, and plain text, are tokenized as before.
    calls.length = 0;
    cache.tokenize(turn(0), true);
    cache.tokenize("word ".repeat(5000), false);
    expect(calls).toEqual([turn(0), "word ".repeat(5000)]);
  });

  it("cuts nowhere when the cuts would change a token (a cut inside a special token)", () => {
    const { tokenizer, calls } = countingTokenizer();
    const cache = new TokenizationCache(tokenizer);
    const sample = "<|im_end|>\n<|im_start|>user\n".repeat(50);
    expect(cache.allowCuts("special", ["<|im_"], sample)).toBe(false);
    calls.length = 0;
    const long = "<|im_end|>\n<|im_start|>user\n".repeat(1000);
    expect(cache.tokenize(long, true)).toEqual(model.tokenizer(long, true));
    expect(calls).toHaveLength(1);
  });

  it("cuts long plain text after user-defined tokens, which llama.cpp splits plain text at too", () => {
    const { tokenizer, calls } = countingTokenizer(reasoning);
    const cache = new TokenizationCache(tokenizer);
    const sample = "a<think>b </think>\n<think></think> x".repeat(20);
    expect(cache.allowCuts("plain", ["<think>", "</think>"], sample)).toBe(true);
    // A message that spells them thousands of times (as one could spell Qwen2.5's [PAD151700]).
    const message = Array.from({ length: 3000 }, (_, i) => `step ${i}<think>${i % 7 === 0 ? " why" : ""}</think>`).join("\n");
    calls.length = 0;
    expect(cache.tokenize(message, false)).toEqual(reasoning.tokenizer(message, false));
    expect(calls.length).toBeGreaterThan(10);
    expect(calls.join("")).toBe(message);
    // Kept like any long piece: asked again, it reaches the model no more.
    calls.length = 0;
    expect(cache.tokenize(message, false)).toEqual(reasoning.tokenizer(message, false));
    expect(calls).toHaveLength(0);
    // Special-token text is cut only where it was allowed for it: here nowhere.
    calls.length = 0;
    expect(cache.tokenizeRaw(message, true)).toEqual(reasoning.tokenizer(message, true));
    expect(calls).toEqual([message]);
    expect(cache.cutMarkers()).toEqual({ special: [], plain: ["<think>", "</think>"] });
  });

  it("a loaded engine cuts after its vocabulary's special tokens, and plain text after the user-defined ones", async () => {
    const entry = ModelEntry.parse({ id: "tiny-reasoning", type: "text", backend: "llama", file: tinyReasoningPath(), llama: { contextSize: 4096, sequences: 1, threads: 1 } });
    const engine = await LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: false });
    try {
      const cuts = engine.tokenizationCuts();
      expect(cuts.special).toEqual(expect.arrayContaining(["<|im_start|>", "<|im_end|>", "<think>", "</think>"]));
      expect(cuts.plain.sort()).toEqual(["</think>", "<think>"]);
      // A raw prompt spelling them many times gets exactly the tokens it has whole.
      // (Special tokens are one token each: 12,000 characters, within the 4,096-token context.)
      const prompt = "<|im_end|><think>a</think><|im_start|>".repeat(300);
      const planned = engine.planCompletion({ prompts: [prompt], maxTokens: 1, sampling: { temperature: 0 } });
      const whole = reasoning.tokenizer(prompt, true);
      const bos = reasoning.tokens.shouldPrependBosToken && reasoning.tokens.bos !== null && whole[0] !== reasoning.tokens.bos ? 1 : 0;
      expect(planned.promptTokens).toBe(whole.length + bos);
    } finally {
      await engine.dispose();
    }
  });
});
