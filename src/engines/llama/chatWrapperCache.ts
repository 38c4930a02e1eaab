import { type ChatWrapper, JinjaTemplateChatWrapper, type LlamaModel, resolveChatWrapper } from "node-llama-cpp";
import { knownChatWrapper } from "./knownChatFeatures.js";
import { modelFileKey } from "./modelFileKey.js";

/**
 * The chat wrapper for a model file, resolved once per file (path, size, modification time).
 * node-llama-cpp's resolution renders the model's Jinja template against every compatible
 * specialized wrapper, on the event loop: 0.6 to 1.3 s for the demo chat model, during which
 * no other request moves, paid again on every reload of a model unloaded when idle or evicted
 * for another. What is kept:
 * - a specialized wrapper itself (it holds only the settings the resolution chose);
 * - for a template no specialized wrapper renders, only that answer: a Jinja template wrapper
 *   holds the model's tokenizer, which dies with the model, and building one for a known
 *   answer takes about 10 ms (the same wrapper the resolution ends with).
 * Templates Hearth generates are answered from the known-template table on the first load too.
 */
const resolved = new Map<string, { wrapper: ChatWrapper } | "jinjaTemplate">();

export function chatWrapperFor(file: string, model: LlamaModel): ChatWrapper {
  const key = modelFileKey(file);
  const known = key === undefined ? undefined : resolved.get(key);
  if (known !== undefined && known !== "jinjaTemplate") return known.wrapper;
  const metadata = model.fileInfo.metadata;
  const template = metadata.tokenizer?.chat_template;
  if (known === "jinjaTemplate" || (typeof template === "string" && knownChatWrapper(template, metadata.general?.architecture) === "jinjaTemplate")) {
    // Falls back to the full resolution by itself if the template does not build.
    return resolveChatWrapper(model, { type: "jinjaTemplate" });
  }
  const wrapper = resolveChatWrapper(model);
  if (key !== undefined) resolved.set(key, wrapper instanceof JinjaTemplateChatWrapper ? "jinjaTemplate" : { wrapper });
  return wrapper;
}
