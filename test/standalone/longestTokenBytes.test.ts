import { join } from "node:path";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { expect, it } from "vitest";
import { longestTokenBytes } from "../../src/engines/llama/longestTokenBytes.js";
import { QWEN25_HEADER_SHAPE, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * The bound behind a chat prompt's and an embedding input's refusal by length, read from the
 * whole vocabulary when a model loads: on a real-sized one over 100 ms of detokenizing, which
 * must not hold the event loop (every other request and stream would wait).
 */
it("reads a real-sized vocabulary's longest token between turns of the event loop, and finds the longest", async () => {
  const path = join(testTempDir("hearth-longest-"), "qwen-header.gguf");
  await writeChatModel(path, QWEN25_HEADER_SHAPE);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
  try {
    let turns = 0;
    let done = false;
    const countTurns = () => {
      if (done) return;
      turns++;
      setImmediate(countTurns);
    };
    setImmediate(countTurns);
    const longest = await longestTokenBytes(model);
    done = true;
    // 151,936 tokens: the event loop turned while they were read, not once after.
    expect(turns).toBeGreaterThanOrEqual(10);
    // Byte-level BPE spells each byte as one character, and this vocabulary's special tokens are
    // ASCII: the longest token in bytes is the longest piece in characters.
    const pieces = model.fileInfo.metadata.tokenizer.ggml.tokens as readonly string[];
    expect(pieces).toHaveLength(151_936);
    expect(longest).toBe(pieces.reduce((most, piece) => Math.max(most, [...piece].length), 4));
  } finally {
    await model.dispose();
  }
}, 60_000);
