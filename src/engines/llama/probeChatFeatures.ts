import { basename } from "node:path";
import { resolveChatWrapper, type GgufFileInfo } from "node-llama-cpp";
import { describeTemplate } from "./ChatSyntax.js";
import { knownChatFeatures } from "./knownChatFeatures.js";
import { readGgufScalarMetadata } from "./readGgufScalarMetadata.js";

/**
 * What a GGUF chat model can do, read from its header alone (template and model metadata),
 * without loading the weights: GET /models answers from this for models that have not been
 * loaded yet, with the same rules the loaded engine applies.
 *
 * A template Hearth knows (the generated models') is answered from a table the full
 * analysis is tested against; any other is analysed, about a second of template rendering.
 */
export async function probeChatFeatures(file: string) {
  const metadata = await readGgufScalarMetadata(file);
  const template = (metadata.tokenizer as { chat_template?: unknown } | undefined)?.chat_template;
  const architecture = (metadata.general as { architecture?: unknown } | undefined)?.architecture;
  const known = typeof template === "string" && typeof architecture === "string" ? knownChatFeatures(template, architecture) : undefined;
  return known ?? analyseChatFeatures(metadata, basename(file));
}

/**
 * node-llama-cpp's own resolution. It reads the metadata only (architecture, names, size
 * label, template; never the vocabulary arrays), so the scalar metadata stands in for the
 * whole file info.
 */
export function analyseChatFeatures(metadata: Record<string, unknown>, filename: string) {
  const fileInfo = { metadata } as unknown as GgufFileInfo;
  const wrapper = resolveChatWrapper({ fileInfo, filename, warningLogs: false });
  if (!wrapper) return { functionCalling: false, reasoning: false, reasoningToggle: false };
  return describeTemplate(wrapper, fileInfo.metadata.tokenizer?.chat_template as string | undefined);
}
