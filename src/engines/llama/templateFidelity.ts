import { type ChatHistoryItem, type ChatWrapper, JinjaTemplateChatWrapper, QwenChatWrapper, type Tokenizer } from "node-llama-cpp";

// Where the chat wrapper node-llama-cpp resolves for a model renders a request differently from the
// model's own template, and what Hearth does about it. test/standalone/templateFidelity.test.ts
// renders conversations both ways.

/**
 * The system message a GGUF's Jinja template writes when a conversation starts without one,
 * where the chat wrapper standing in for the template leaves it out; null when there is none or
 * the wrapper already renders it.
 *
 * node-llama-cpp replaces a template by a specialized wrapper when the two render its test
 * conversations alike, and every one of those starts with a system message, so a template's
 * default is never compared. Qwen2.5's template writes "You are a helpful assistant." (the real
 * models: "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") into every
 * conversation without a system message; its wrapper does not, so the same request gave the
 * model a different prompt on Hearth than on llama-server, transformers or vLLM.
 *
 * The default is read off the template, not from a list: rendered with a marker system message,
 * the text around the marker must frame the conversation rendered without one, and what it
 * frames is the default. It is kept only if the wrapper, given that text as the system message,
 * renders exactly what the template renders without one.
 */
export function templateDefaultSystemPrompt(wrapper: ChatWrapper, template: string | undefined, tokenizer?: Tokenizer): string | null {
  if (template === undefined || template.trim() === "" || wrapper instanceof JinjaTemplateChatWrapper) return null;
  try {
    const jinja = new JinjaTemplateChatWrapper({ template, tokenizer, trimLeadingWhitespaceInResponses: false });
    const user: ChatHistoryItem = { type: "user", text: "Which way is north?" };
    const answer: ChatHistoryItem = { type: "model", response: [] };
    const render = (renderer: ChatWrapper, chatHistory: ChatHistoryItem[]) => renderer.generateContextState({ chatHistory }).contextText.toString();

    const withoutSystem = render(jinja, [user, answer]);
    if (render(wrapper, [user, answer]) === withoutSystem) return null;
    const marker = "\u2063system-marker\u2063";
    const withMarker = render(jinja, [{ type: "system", text: marker }, user, answer]);
    const at = withMarker.indexOf(marker);
    if (at < 0) return null;
    const before = withMarker.slice(0, at);
    const after = withMarker.slice(at + marker.length);
    if (withoutSystem.length <= before.length + after.length || !withoutSystem.startsWith(before) || !withoutSystem.endsWith(after)) return null;
    const fallback = withoutSystem.slice(before.length, withoutSystem.length - after.length);
    return render(wrapper, [{ type: "system", text: fallback }, user, answer]) === withoutSystem ? fallback : null;
  } catch {
    // A template node-llama-cpp's Jinja engine cannot render: keep the wrapper's rendering.
    return null;
  }
}

/**
 * Sets the wrapper up to take a tool message's content as the text the client sent where it can,
 * and says whether it did (true) or needs it parsed from JSON (false). Templates give the model that text as it is. node-llama-cpp's
 * wrappers print a result with `jsonDumps` (Python's `json.dumps` spacing): parsed JSON comes out
 * re-spaced (`{"sky": "clear"}` for `{"sky":"clear"}`; the same text when the client wrote it that
 * way, as Python's json.dumps does) and a string comes out quoted. The Qwen wrapper has a switch
 * that prints a string result as it is (node-llama-cpp's own, which its resolution turns on only
 * when a template's test rendering needs it; Qwen's templates print results as they are), so Qwen
 * models get the text. Every other wrapper gets parsed JSON, as before: the Jinja wrapper given a
 * string renders an earlier thought of the calling turn into the prompt, and the others quote it.
 */
export function passToolResultsAsText(wrapper: ChatWrapper): boolean {
  if (!(wrapper instanceof QwenChatWrapper)) return false;
  (wrapper as unknown as { _flatFunctionResultString: boolean })._flatFunctionResultString = true;
  return true;
}
