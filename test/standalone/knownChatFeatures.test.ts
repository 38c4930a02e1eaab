import { createHash } from "node:crypto";
import { chatWrappers, resolveChatWrapper, specializedChatWrapperTypeNames, type GgufFileInfo } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { describeTemplate } from "../../src/engines/llama/ChatSyntax.js";
import { KNOWN_CHAT_TEMPLATES, knownChatFeatures } from "../../src/engines/llama/knownChatFeatures.js";
import { buildSpecialized, specializedChoiceOf } from "../../src/engines/llama/specializedChoice.js";
import type { ChatModelShape } from "../../src/fixtures/gguf/chatModel.js";
import * as fixtureTemplates from "../../src/fixtures/gguf/chatTemplates.js";

/**
 * GET /models answers the templates Hearth generates from a table instead of node-llama-cpp's
 * analysis (resolveChatWrapper, up to a second per file). Here the analysis runs for every
 * fixture template on every fixture architecture, so the table cannot drift from it.
 *
 * The analysis tries its specialized wrappers in an order set by the model's name and file
 * name and takes the first whose rendering matches the template. An entry holds for any name
 * only if no other wrapper matches: each case runs with every other wrapper named in the file
 * name (so each is tried before the expected one), once with a plain model name (Llama 3.1's
 * wrapper applies) and once as a Llama 3.2 1B (its lightweight wrapper applies instead).
 */

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** Every architecture the fixture writer produces; a new one is a compile error here until it is covered. */
const FIXTURE_ARCHITECTURES = Object.keys({ llama: true, qwen2: true } satisfies Record<ChatModelShape["architecture"], true>);
const LINEAGES = [{ name: "Hearth Test Model" }, { name: "Llama 3.2", size_label: "1B" }];

const cases = Object.entries(fixtureTemplates).flatMap(([template, text]) => FIXTURE_ARCHITECTURES.map((architecture) => ({ template, text, architecture })));

describe("the chat features of known templates", () => {
  it("lists only fixture templates, each on every fixture architecture", () => {
    const fixtureHashes = Object.values(fixtureTemplates).map(sha256);
    for (const known of KNOWN_CHAT_TEMPLATES) {
      expect(fixtureHashes).toContain(known.sha256);
      expect(Object.keys(known.byArchitecture).sort()).toEqual([...FIXTURE_ARCHITECTURES].sort());
    }
    expect(KNOWN_CHAT_TEMPLATES.map((known) => known.sha256).sort()).toEqual([...fixtureHashes].sort());
  });

  it.each(cases)("$template on $architecture: the full analysis agrees whatever the model is named", ({ text, architecture }) => {
    const known = KNOWN_CHAT_TEMPLATES.find((entry) => entry.sha256 === sha256(text))!.byArchitecture[architecture]!;
    const expectedWrapper = known.wrapper === "jinjaTemplate" ? chatWrappers.jinjaTemplate : chatWrappers[known.wrapper];
    const othersFirst = `${specializedChatWrapperTypeNames.filter((name) => name !== known.wrapper).join("-")}.gguf`;
    // The expected wrapper's own name must not appear, or it would be ranked among the others.
    expect(othersFirst.toLowerCase()).not.toContain(known.wrapper.toLowerCase());
    for (const general of LINEAGES) {
      const fileInfo = { metadata: { general: { architecture, ...general }, tokenizer: { chat_template: text } } } as unknown as GgufFileInfo;
      const wrapper = resolveChatWrapper({ fileInfo, filename: othersFirst, warningLogs: false });
      expect(wrapper?.constructor, `${general.name}: wrapper`).toBe(expectedWrapper);
      expect(describeTemplate(wrapper!, text), `${general.name}: features`).toEqual(known.features);
      // A model whose template is known gets the specialized wrapper built with its defaults, without the analysis.
      if (known.wrapper !== "jinjaTemplate") {
        expect(specializedChoiceOf(wrapper!), `${general.name}: settings`).toEqual({ type: known.wrapper, settings: {} });
        expect(buildSpecialized({ type: known.wrapper, settings: {} }).constructor).toBe(expectedWrapper);
      }
    }
    expect(knownChatFeatures(text, architecture)).toEqual(known.features);
  });

  it("knows nothing of a changed template or another architecture", () => {
    const text = fixtureTemplates.CHATML_TOOLS_TEMPLATE;
    expect(knownChatFeatures(text, "qwen2")).toBeDefined();
    expect(knownChatFeatures(`${text}\n`, "qwen2")).toBeUndefined();
    expect(knownChatFeatures(text, "qwen3")).toBeUndefined();
    // Inherited property names are not architectures.
    expect(knownChatFeatures(text, "constructor")).toBeUndefined();
  });
});
