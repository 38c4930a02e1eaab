import {
  AlpacaChatWrapper,
  ChatMLChatWrapper,
  EmptyChatWrapper,
  FalconChatWrapper,
  GeneralChatWrapper,
  GemmaChatWrapper,
  isLlamaText,
  JinjaTemplateChatWrapper,
  Llama2ChatWrapper,
  Llama3ChatWrapper,
  LlamaText,
  QwenChatWrapper,
  type ChatWrapper,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";

/** Wrappers for formats that were never trained on tool calls (node-llama-cpp gives them a generic syntax). */
const WITHOUT_TOOL_TRAINING = [
  GeneralChatWrapper,
  ChatMLChatWrapper,
  AlpacaChatWrapper,
  FalconChatWrapper,
  Llama2ChatWrapper,
  Llama3ChatWrapper,
  GemmaChatWrapper,
  EmptyChatWrapper,
];

/** What a chat template can do, read without loading the model (GET /models) or from a loaded one. */
export function describeTemplate(wrapper: ChatWrapper, template: string | undefined) {
  const functionCalling = wrapper instanceof JinjaTemplateChatWrapper ? wrapper.usingJinjaFunctionCallTemplate : !WITHOUT_TOOL_TRAINING.some((type) => wrapper instanceof type);
  const thought = wrapper.settings.segments?.thought;
  const reasoning = thought !== undefined;
  // Qwen3-style templates close the thought block up front when enable_thinking is false.
  const reasoningToggle = reasoning && (wrapper instanceof QwenChatWrapper || (template ?? "").includes("enable_thinking"));
  return { functionCalling, reasoning, reasoningToggle };
}

export interface ToolCallSyntax {
  /** The call's opening, up to where the function name starts. */
  prefixTokens: Token[];
  /** Sampling this token (a dedicated tag such as `<tool_call>`) means the model starts a call. */
  trigger: Token | null;
  /** Between the name and the arguments' JSON (some syntaxes repeat the name here). */
  paramsPrefixTokens(name: string): Token[];
  /** After the arguments' JSON. */
  suffixTokens(name: string): Token[];
}

export interface ThoughtSyntax {
  openTag: string;
  closeTag: string;
  /** Injected to open a thought block at the start of an answer. */
  openTokens: Token[];
  /** Injected to close a thought block (tag and the blank line after it). */
  closeTokens: Token[];
  /** The empty, closed block a template writes when thinking is switched off. */
  disabledTokens: Token[];
  /** The template itself opens the block in the generation prompt. */
  openedByTemplate: boolean;
}

/**
 * The model's own spellings of tool calls and thought blocks, derived from its chat wrapper
 * (which node-llama-cpp reads from the GGUF's Jinja template), tokenized once per model.
 */
export class ChatSyntax {
  private constructor(
    readonly toolCall: ToolCallSyntax | null,
    readonly thought: ThoughtSyntax,
    readonly features: ReturnType<typeof describeTemplate>,
  ) {}

  static from(wrapper: ChatWrapper, model: LlamaModel): ChatSyntax {
    const template = model.fileInfo.metadata.tokenizer?.chat_template as string | undefined;
    const features = describeTemplate(wrapper, template);
    const tokenize = (text: LlamaText) => text.tokenize(model.tokenizer);
    const call = wrapper.settings.functions.call;
    let toolCall: ToolCallSyntax | null = null;
    const prefixTokens = tokenize(LlamaText(call.prefix));
    if (features.functionCalling && prefixTokens.length > 0) {
      const first = prefixTokens[0]!;
      const tagLike = model.isSpecialToken(first) || model.detokenize([first], true).trim().length >= 3;
      const named = (text: LlamaText, name: string) => LlamaText(text.values.map((value) => (typeof value === "string" ? value.replaceAll("{{functionName}}", name) : value)));
      toolCall = {
        prefixTokens,
        trigger: tagLike ? first : null,
        paramsPrefixTokens: (name) => tokenize(named(LlamaText(call.paramsPrefix), name)),
        suffixTokens: (name) => tokenize(named(LlamaText(call.suffix), name)),
      };
    }
    const segment = wrapper.settings.segments?.thought;
    const openedByTemplate = segment !== undefined && !isText(segment.prefix);
    const prefix = segment && isText(segment.prefix) ? LlamaText(segment.prefix) : LlamaText("<think>\n");
    const suffix = segment?.suffix !== undefined ? LlamaText(segment.suffix) : LlamaText("\n</think>");
    const thought: ThoughtSyntax = {
      openTag: prefix.toString().trim() || "<think>",
      closeTag: suffix.toString().trim() || "</think>",
      openTokens: tokenize(prefix),
      closeTokens: tokenize(LlamaText([suffix, "\n\n"])),
      disabledTokens: tokenize(LlamaText([prefix, suffix, "\n\n"])),
      openedByTemplate,
    };
    return new ChatSyntax(toolCall, thought, features);
  }
}

function isText(value: unknown): value is string | LlamaText {
  return typeof value === "string" || isLlamaText(value);
}
