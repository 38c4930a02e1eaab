import { join } from "node:path";
import { getLlama, LlamaLogLevel, readGgufFileInfo } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { QWEN25_HEADER_SHAPE, TINY_CHAT, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { toHalf } from "../../src/fixtures/gguf/GgufWriter.js";
import { StreamingDetokenizer } from "../../src/engines/llama/StreamingDetokenizer.js";
import { testTempDir } from "../helpers/tempDir.js";

describe("generated GGUF models", () => {
  it("encodes halves like IEEE 754", () => {
    expect(toHalf(1)).toBe(0x3c00);
    expect(toHalf(-2)).toBe(0xc000);
    expect(toHalf(0.5)).toBe(0x3800);
    expect(toHalf(65504)).toBe(0x7bff);
    expect(toHalf(1e-8)).toBe(0);
  });

  it.each(["F32", "F16", "Q8_0"] as const)("writes a %s file that llama.cpp's parser reads with the real tensor names", async (weightType) => {
    const path = join(testTempDir("hearth-gguf-"), "m.gguf");
    await writeChatModel(path, { ...TINY_CHAT, weightType });
    const info = await readGgufFileInfo(path);
    expect(info.version).toBe(3);
    expect(info.metadata.general.architecture).toBe("llama");
    const names = info.fullTensorInfo!.map((t) => t.name);
    expect(names).toContain("token_embd.weight");
    expect(names).toContain("blk.1.ffn_down.weight");
    expect(names).toContain("output.weight");
    expect(info.metadata.tokenizer.ggml.model).toBe("gpt2");
    expect(String(info.metadata.tokenizer.chat_template)).toContain("<tool_call>");
  });

  it("tokenizes English into merged tokens and round-trips text", async () => {
    const path = join(testTempDir("hearth-gguf-"), "m.gguf");
    await writeChatModel(path, TINY_CHAT);
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: path });
    const text = "Hello there, how are you? The weather is fine. ü €";
    const tokens = model.tokenize(text);
    expect(tokens.length).toBeLessThan(Buffer.byteLength(text));
    expect(model.detokenize(tokens)).toBe(text);

    // Streaming detokenization holds back split UTF-8 characters and stop-string prefixes.
    const stream = new StreamingDetokenizer(model, ["how are"]);
    let shown = "";
    let stopped = false;
    for (const token of tokens) {
      const step = stream.push(token);
      shown += step.delta;
      expect(shown).not.toContain("\uFFFD");
      if (step.stopped) {
        stopped = true;
        break;
      }
    }
    expect(stopped).toBe(true);
    expect(shown).toBe("Hello there, ");
    await model.dispose();
  });

  it("a loaded model keeps its vocabulary in JavaScript but not the BPE merges or token types (the install-time patch)", async () => {
    const path = join(testTempDir("hearth-gguf-"), "m.gguf");
    await writeChatModel(path, TINY_CHAT);
    const file = await readGgufFileInfo(path);
    expect(file.metadata.tokenizer.ggml.merges?.length).toBeGreaterThan(0);
    const vocabularySize = file.metadata.tokenizer.ggml.tokens.length;
    expect(file.metadata.tokenizer.ggml.token_type).toHaveLength(vocabularySize);

    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: path });
    try {
      const tokenizer = model.fileInfo.metadata.tokenizer;
      expect(tokenizer.ggml.tokens).toHaveLength(vocabularySize);
      expect(tokenizer.chat_template).toBe(file.metadata.tokenizer.chat_template);
      expect(tokenizer.ggml.merges).toBeUndefined();
      expect(tokenizer.ggml.token_type).toBeUndefined();
      // llama.cpp read them from the file: merged tokens, special tokens as such.
      expect(model.tokenize("the weather").length).toBeLessThan("the weather".length);
      expect(model.tokens.eos).toBe(file.metadata.tokenizer.ggml.eos_token_id);
    } finally {
      await model.dispose();
    }
  });

  it("the Qwen2.5-shaped vocabulary comes with a real one's count of merges, which llama.cpp applies", async () => {
    const path = join(testTempDir("hearth-gguf-"), "qwen-header.gguf");
    await writeChatModel(path, QWEN25_HEADER_SHAPE);
    const file = await readGgufFileInfo(path, { readTensorInfo: false });
    const { tokens, merges } = file.metadata.tokenizer.ggml;
    expect(tokens).toHaveLength(151_936);
    // Qwen2.5's own tokenizer has 151,387.
    expect(merges!.length).toBeGreaterThan(150_000);
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
    try {
      // " wzq" is a padding token three merges away from its bytes: " w", " wz", " wzq". (Qwen2.5's
      // pre-tokenizer splits digits off, so only the fillers spelled in letters come out whole.)
      expect(model.tokenize(" wzq")).toEqual([tokens.indexOf("\u0120wzq")]);
    } finally {
      await model.dispose();
    }
  });
});
