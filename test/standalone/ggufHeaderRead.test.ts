import fsPromises from "node:fs/promises";
import { join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { expect, it, vi } from "vitest";
import { QWEN25_HEADER_SHAPE, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * node-llama-cpp reads a model's GGUF header in JavaScript at every load, parsing what it has read
 * synchronously. It read the file 4 MB past what it needed at a time, so a real vocabulary's
 * header (about 6 MB) was parsed in two or three stretches of up to 160 ms, during which no request
 * or stream of the node moved. Hearth's install-time patch (patches/node-llama-cpp+*.patch) reads
 * 256 KB at a time: the same parse, in stretches of about 12 ms.
 */
it("node-llama-cpp reads a real-sized GGUF header from disk 256 KB at a time (the install-time patch)", async () => {
  const path = join(testTempDir("hearth-gguf-read-"), "qwen-header.gguf");
  await writeChatModel(path, QWEN25_HEADER_SHAPE);
  const open = vi.spyOn(fsPromises, "open");
  try {
    const info = await readGgufFileInfo(path, { ignoreKeys: ["tokenizer.ggml.merges", "tokenizer.ggml.token_type"] });
    expect(info.metadata.tokenizer.ggml.tokens).toHaveLength(151_936);
    const reads = open.mock.calls.filter(([file]) => file === path).length;
    // Each read of the file opens it; 4 MB at a time took 2 reads for this header, 256 KB at a time takes one per 256 KB.
    expect(info.metadataSize).toBeGreaterThan(4 * 2 ** 20);
    expect(reads).toBeGreaterThanOrEqual(Math.floor(info.metadataSize / (256 * 1024)));
  } finally {
    open.mockRestore();
  }
}, 60_000);
