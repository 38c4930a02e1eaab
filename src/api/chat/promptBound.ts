import type { ChatEngine, ChatMessage, TemplateCosts, TemplateTokens } from "../../engines/types.js";
import { InvalidRequestError } from "../../errors.js";
import type { ChatCompletionRequest } from "./schema.js";

/**
 * Refuses a prompt that cannot fit the model's context by its length alone, before anything is
 * rendered or tokenized: more messages than the context holds at the template's own tokens
 * (`templateTokenFloor`), a field longer than the engine's `maxPromptChars` (the context times
 * the longest token piece), and messages or tool definitions whose text together is, are each a
 * 400 naming the field. Engines without a sound bound (relays, vocabularies that can drop
 * characters) skip it.
 */
export function checkPromptLength(
  request: ChatCompletionRequest,
  engine: Pick<ChatEngine, "maxPromptChars" | "contextSize" | "templateTokens">,
  modelId: string,
  conversation?: readonly ChatMessage[],
): void {
  const maxChars = engine.maxPromptChars;
  if (maxChars === undefined) return;
  // Each message costs the template's own tokens, content or not: 60,000 empty messages took 43 s
  // of the event loop to render and tokenize before the context refused them.
  const floor = templateTokenFloor(request.messages, engine.templateTokens);
  if (floor > engine.contextSize) {
    throw InvalidRequestError.forField(
      ["messages"],
      `${request.messages.length} messages cannot fit: the chat template writes at least ${floor} tokens around them, and ${modelId}'s context holds ${engine.contextSize}`,
    );
  }
  const refuse = (path: (string | number)[], chars: number) =>
    InvalidRequestError.forField(path, `${chars} characters cannot fit: ${modelId}'s context holds ${engine.contextSize} tokens, which is never more than ${maxChars} characters`);
  let total = 0;
  for (const [i, message] of request.messages.entries()) {
    for (const [path, text] of textFields(message)) {
      if (text.length > maxChars) throw refuse(["messages", i, ...path], text.length);
      total += text.length;
    }
  }
  if (total > maxChars) throw refuse(["messages"], total);
  // Tool definitions are written into the prompt too (a 30 MB description took 25 s to tokenize).
  let toolChars = 0;
  for (const [i, text] of toolTexts(request).entries()) {
    if (text.length > maxChars) throw refuse(["tools", i, "function"], text.length);
    toolChars += text.length;
  }
  if (toolChars > maxChars) throw refuse(["tools"], toolChars);
  if (total + toolChars > maxChars) throw refuse(["messages"], total + toolChars);
  // What the model reads: the caller's text with extracted documents, a character's prompt and web results.
  if (conversation) {
    const rendered = conversation.reduce((sum, m) => sum + (m.content?.length ?? 0) + (m.role === "assistant" ? (m.reasoning?.length ?? 0) : 0), 0);
    if (rendered > maxChars) throw refuse(["messages"], rendered);
  }
}

/** Text longer than this is measured in slices before the prompt is tokenized whole. */
const MEASURE_ABOVE_CHARS = 4096;

/**
 * A conversation whose text passes the length bound but is long: its tokens are counted in
 * slices (the event loop free between them) and a conversation that cannot fit the context is
 * refused before the prompt is tokenized in one go on the event loop.
 */
export async function checkPromptTokens(
  engine: Pick<ChatEngine, "countTokensAtLeast" | "contextSize">,
  modelId: string,
  conversation: readonly ChatMessage[],
  request?: Pick<ChatCompletionRequest, "tools">,
): Promise<void> {
  if (!engine.countTokensAtLeast) return;
  const texts = [...conversation.flatMap((m) => [m.content ?? "", m.role === "assistant" ? (m.reasoning ?? "") : ""]), ...(request ? toolTexts(request) : [])].filter(
    (t) => t.length > 0,
  );
  if (texts.reduce((sum, t) => sum + t.length, 0) <= MEASURE_ABOVE_CHARS) return;
  const tokens = await engine.countTokensAtLeast(texts, engine.contextSize);
  if (tokens > engine.contextSize) {
    throw InvalidRequestError.forField(["messages"], `the conversation has more than ${engine.contextSize} tokens; ${modelId}'s context holds ${engine.contextSize}`);
  }
}

/**
 * The fewest tokens a template writes around these messages, besides their content: a message
 * that continues its turn costs the least a merged message does, and each change between user
 * and assistant opens a turn. Changes alternate (to assistant, to user, ...), so every two of
 * them cost an exchange. Empty messages are costed apart (a template may drop them). Whatever
 * the template, a message counts at least one token: more messages than the context has tokens
 * are refused even where a template would drop them all.
 */
export function templateTokenFloor(messages: readonly TemplatedMessage[], template: TemplateTokens | undefined): number {
  const cost = (hasContent: boolean, key: keyof TemplateCosts) => (hasContent ? template?.withContent : template?.empty)?.[key] ?? 0;
  let floor = 0;
  // Whether the first change of an exchange opened a message with content; null: no exchange open.
  let opened: boolean | null = null;
  for (const [i, message] of messages.entries()) {
    const hasContent = messageHasContent(message);
    const before = messages[i - 1]?.role;
    const role = message.role;
    const changes = before !== undefined && before !== role && (before === "user" || before === "assistant") && (role === "user" || role === "assistant");
    if (!changes) floor += cost(hasContent, "perMessage");
    else if (opened === null) opened = hasContent;
    else {
      floor += opened && hasContent ? cost(true, "perExchange") : Math.min(cost(true, "perExchange"), cost(false, "perExchange"));
      opened = null;
    }
  }
  if (opened !== null) floor += cost(opened, "perMessage");
  return Math.max(floor, messages.length);
}

/** What the floor reads of a message. */
type TemplatedMessage = { role: string; content?: unknown; tool_calls?: readonly unknown[] | null };

function messageHasContent(message: TemplatedMessage): boolean {
  const { content } = message;
  if (typeof content === "string" ? content.length > 0 : Array.isArray(content) && content.length > 0) return true;
  return (message.tool_calls?.length ?? 0) > 0;
}

/** Each tool's text as the prompt carries it: name, description and parameters schema. */
function toolTexts(request: Pick<ChatCompletionRequest, "tools">): string[] {
  return (request.tools ?? []).map((tool) => {
    if (tool.type !== "function" || !("function" in tool)) return ""; // built-in search tools write nothing of the caller's
    const { name, description, parameters } = tool.function;
    return `${name} ${description ?? ""} ${parameters === undefined ? "" : JSON.stringify(parameters)}`;
  });
}

function* textFields(message: ChatCompletionRequest["messages"][number]): Generator<[(string | number)[], string]> {
  const { content } = message;
  if (typeof content === "string") yield [["content"], content];
  else if (Array.isArray(content)) {
    for (const [j, part] of content.entries()) if (part.type === "text") yield [["content", j, "text"], part.text];
  }
  if (message.role === "assistant") {
    if (typeof message.reasoning_content === "string") yield [["reasoning_content"], message.reasoning_content];
    for (const [k, call] of (message.tool_calls ?? []).entries()) yield [["tool_calls", k, "function", "arguments"], call.function.arguments];
  }
}
