import { createHash } from "node:crypto";
import type { SpecializedChatWrapperTypeName } from "node-llama-cpp";
import type { describeTemplate } from "./ChatSyntax.js";

type TemplateFeatures = ReturnType<typeof describeTemplate>;

export interface KnownChatTemplate {
  description: string;
  /** SHA-256 of the template text, as `tokenizer.chat_template` holds it. */
  sha256: string;
  /**
   * What node-llama-cpp's analysis makes of the template, per `general.architecture`: the
   * wrapper it picks (its Qwen wrapper only matches Qwen architectures, so the same
   * template differs by architecture), always with that wrapper's default settings, and the
   * features describeTemplate reads from it.
   */
  byArchitecture: Record<string, { wrapper: SpecializedChatWrapperTypeName | "jinjaTemplate"; features: TemplateFeatures }>;
}

/**
 * The templates of the models Hearth generates (src/fixtures/gguf/chatTemplates.ts), with the
 * answer of the full analysis (resolveChatWrapper: renders the template against every
 * wrapper, 0.1 to 1 s). test/standalone/knownChatFeatures.test.ts runs that analysis for
 * every fixture template and architecture here, in the orders that put every other wrapper
 * first, so an entry holds whatever the model's name and file name are, and a changed
 * template or node-llama-cpp version fails the test instead of listing stale features.
 */
export const KNOWN_CHAT_TEMPLATES: readonly KnownChatTemplate[] = [
  {
    description: "ChatML with Qwen2.5-style tool calls",
    sha256: "0053e3d172dac95587a48dd8c142f5a503bb6c3b8cdc6f75eb500893e3df1b8a",
    byArchitecture: {
      llama: { wrapper: "jinjaTemplate", features: { functionCalling: true, reasoning: false, reasoningToggle: false } },
      qwen2: { wrapper: "qwen", features: { functionCalling: true, reasoning: true, reasoningToggle: true } },
    },
  },
  {
    description: "ChatML with tool calls and a Qwen3-style <think> block (enable_thinking)",
    sha256: "cbe0a345a3ee5fa6f668e5a9ae35331843c2fc84da026314f711c672420e6c52",
    byArchitecture: {
      llama: { wrapper: "jinjaTemplate", features: { functionCalling: true, reasoning: true, reasoningToggle: true } },
      qwen2: { wrapper: "qwen", features: { functionCalling: true, reasoning: true, reasoningToggle: true } },
    },
  },
  {
    description: "plain ChatML",
    sha256: "fcbc2adf2e3e880bfb5efca2f1b5145af5a8d26302a01e1635da6af59bfcd7c5",
    byArchitecture: {
      llama: { wrapper: "chatML", features: { functionCalling: false, reasoning: false, reasoningToggle: false } },
      qwen2: { wrapper: "chatML", features: { functionCalling: false, reasoning: false, reasoningToggle: false } },
    },
  },
];

const BY_SHA256 = new Map(KNOWN_CHAT_TEMPLATES.map((known) => [known.sha256, known]));

/** The wrapper the full analysis picks for a known template on this architecture; undefined for any other. */
export function knownChatWrapper(template: string, architecture: string | undefined): SpecializedChatWrapperTypeName | "jinjaTemplate" | undefined {
  return knownAnswer(template, architecture)?.wrapper;
}

/** The features of a known template on this architecture, without analysing it; undefined for any other. */
export function knownChatFeatures(template: string, architecture: string): TemplateFeatures | undefined {
  const answer = knownAnswer(template, architecture);
  return answer ? { ...answer.features } : undefined;
}

function knownAnswer(template: string, architecture: string | undefined): KnownChatTemplate["byArchitecture"][string] | undefined {
  const known = BY_SHA256.get(createHash("sha256").update(template).digest("hex"));
  return known && architecture !== undefined && Object.hasOwn(known.byArchitecture, architecture) ? known.byArchitecture[architecture] : undefined;
}
