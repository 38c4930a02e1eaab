import { basename } from "node:path";
import { readGgufFileInfo, resolveChatWrapper } from "node-llama-cpp";
import { describeTemplate } from "./ChatSyntax.js";

/**
 * What a GGUF chat model can do, read from its header alone (template and tokenizer
 * metadata), without loading the weights: GET /models answers from this for models that
 * have not been loaded yet, with the same rules the loaded engine applies.
 */
export async function probeChatFeatures(file: string) {
  const fileInfo = await readGgufFileInfo(file, { readTensorInfo: false });
  const wrapper = resolveChatWrapper({ fileInfo, filename: basename(file), warningLogs: false });
  if (!wrapper) return { functionCalling: false, reasoning: false, reasoningToggle: false };
  return describeTemplate(wrapper, fileInfo.metadata.tokenizer?.chat_template as string | undefined);
}
