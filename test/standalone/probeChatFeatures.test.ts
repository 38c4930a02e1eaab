import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { readGgufFileInfo, resolveChatWrapper } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTemplate } from "../../src/engines/llama/ChatSyntax.js";
import { knownChatFeatures } from "../../src/engines/llama/knownChatFeatures.js";
import { probeChatFeatures } from "../../src/engines/llama/probeChatFeatures.js";
import { readGgufScalarMetadata } from "../../src/engines/llama/readGgufScalarMetadata.js";
import { QWEN25_HEADER_SHAPE, TINY_CHAT, TINY_REASONING, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { CHATML_PLAIN_TEMPLATE, CHATML_TOOLS_TEMPLATE } from "../../src/fixtures/gguf/chatTemplates.js";
import { writeGguf } from "../../src/fixtures/gguf/GgufWriter.js";

/**
 * The listing's probe reads a GGUF header without its arrays and answers known templates from
 * a table; both must give what the full path gives (node-llama-cpp's whole header read, then
 * its template analysis), on a real-sized vocabulary and on templates the table does not hold.
 */

const dir = mkdtempSync(join(tmpdir(), "hearth-probe-"));
const files = {
  /** Qwen2.5's 151,936-token vocabulary: the header spans many read chunks. */
  qwen: join(dir, "qwen2.5-0.5b-instruct-q8_0.gguf"),
  /** Qwen-shaped with a plain template (no tools, no thought block). */
  qwenPlain: join(dir, "qwen-plain.gguf"),
  tinyReasoning: join(dir, "tiny-reasoning.gguf"),
  /** The tool template with a Jinja comment: renders the same, but is not in the table, so it is analysed. */
  unknownTemplate: join(dir, "custom-template.gguf"),
};
const UNKNOWN_TEMPLATE = `${CHATML_TOOLS_TEMPLATE}{#- a local edit #}`;

beforeAll(async () => {
  await writeChatModel(files.qwen, QWEN25_HEADER_SHAPE);
  await writeChatModel(files.qwenPlain, { ...QWEN25_HEADER_SHAPE, chatTemplate: CHATML_PLAIN_TEMPLATE });
  await writeChatModel(files.tinyReasoning, TINY_REASONING);
  await writeChatModel(files.unknownTemplate, { ...TINY_CHAT, chatTemplate: UNKNOWN_TEMPLATE });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the probe did before: the whole header, then resolveChatWrapper's analysis. */
async function fullAnalysis(file: string) {
  const fileInfo = await readGgufFileInfo(file, { readTensorInfo: false });
  const wrapper = resolveChatWrapper({ fileInfo, filename: basename(file), warningLogs: false })!;
  return describeTemplate(wrapper, fileInfo.metadata.tokenizer?.chat_template as string | undefined);
}

function withoutArrays(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => !Array.isArray(v))
      .map(([k, v]) => [k, typeof v === "object" && v !== null ? withoutArrays(v as Record<string, unknown>) : v]),
  );
}

describe("reading a GGUF header without its arrays", () => {
  it("gives node-llama-cpp's metadata less the arrays, for a real-sized vocabulary", async () => {
    const full = await readGgufFileInfo(files.qwen, { readTensorInfo: false });
    expect(full.metadata.tokenizer.ggml.tokens).toHaveLength(151_936);
    const scalars = await readGgufScalarMetadata(files.qwen);
    expect(scalars).toEqual(withoutArrays(full.metadata as unknown as Record<string, unknown>));
    expect(scalars).toMatchObject({ general: { architecture: "qwen2" }, tokenizer: { chat_template: CHATML_TOOLS_TEMPLATE } });
  });

  it("nests named templates and license keys as node-llama-cpp does", async () => {
    const file = join(dir, "named-templates.gguf");
    await writeGguf(
      file,
      {
        "general.architecture": { type: "string", value: "llama" },
        "general.license": { type: "string", value: "apache-2.0" },
        "general.license.link": { type: "string", value: "https://example.com/license" },
        "tokenizer.ggml.tokens": { type: "string[]", value: ["a", "b", ""] },
        "tokenizer.chat_template": { type: "string", value: CHATML_PLAIN_TEMPLATE },
        "tokenizer.chat_template.tool_use": { type: "string", value: CHATML_TOOLS_TEMPLATE },
        "tokenizer.ggml.scores": { type: "f32[]", value: [0.5, 1.5] },
        "tokenizer.ggml.add_bos_token": { type: "bool", value: true },
        "llama.rope.freq_base": { type: "f32", value: 10000 },
        "llama.block_count": { type: "i32", value: -3 },
      },
      [],
    );
    const full = await readGgufFileInfo(file, { readTensorInfo: false, logWarnings: false });
    const scalars = await readGgufScalarMetadata(file);
    expect(scalars).toEqual(withoutArrays(full.metadata as unknown as Record<string, unknown>));
    expect(scalars).toMatchObject({ tokenizer: { chat_template: CHATML_PLAIN_TEMPLATE, "chat_template.tool_use": CHATML_TOOLS_TEMPLATE } });
  });

  it("rejects a file that is not GGUF and a header cut short", async () => {
    const text = join(dir, "notes.gguf");
    writeFileSync(text, "not a model");
    await expect(readGgufScalarMetadata(text)).rejects.toThrow(/not a GGUF file/);
    const cut = join(dir, "cut.gguf");
    writeFileSync(cut, readFileSync(files.qwen).subarray(0, 200_000));
    await expect(readGgufScalarMetadata(cut)).rejects.toThrow(/ends early/);
  });
});

describe("probing a chat model's features", () => {
  it.each(Object.entries(files))("%s: as the full analysis", async (_name, file) => {
    expect(await probeChatFeatures(file)).toEqual(await fullAnalysis(file));
  });

  it("analyses a template the table does not hold", async () => {
    expect(knownChatFeatures(UNKNOWN_TEMPLATE, "llama")).toBeUndefined();
    // The same answer as the known template it renders like, reached by the analysis.
    expect(await probeChatFeatures(files.unknownTemplate)).toEqual(knownChatFeatures(CHATML_TOOLS_TEMPLATE, "llama"));
  });
});
