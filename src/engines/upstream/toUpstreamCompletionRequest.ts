import type { CompleteOptions } from "../types.js";
import { putSamplingFields } from "./toUpstreamRequest.js";

/**
 * The engine's completion options back into a legacy completions request for an upstream
 * server: the prompts as given (text or token ids), only what the request set, always
 * streamed with usage (as chat is relayed). Echo is added here, not by the upstream.
 */
export function toUpstreamCompletionRequest(options: CompleteOptions, model: string): Record<string, unknown> {
  const { sampling } = options;
  const prompts = options.prompts;
  const body: Record<string, unknown> = {
    model,
    prompt: prompts.length === 1 ? prompts[0] : prompts,
    stream: true,
    stream_options: { include_usage: true },
    temperature: sampling.temperature,
  };
  if (options.suffix !== undefined) body.suffix = options.suffix;
  putSamplingFields(body, options.maxTokens, sampling);
  if (options.stop?.length) body.stop = options.stop;
  if ((options.choices ?? 1) > 1) body.n = options.choices;
  if (options.logprobs) body.logprobs = options.logprobs.top;
  return body;
}

/** An upper bound on the prompt tokens at the upstream: a byte-level tokenizer makes at most one token per UTF-8 byte. */
export function completionPromptBound(options: CompleteOptions): number {
  return sumPrompts(options, (text) => Buffer.byteLength(text, "utf8")) + FIM_ALLOWANCE * options.prompts.length;
}

/** A typical count (about four bytes a token), for billing when the upstream reports no usage. */
export function completionPromptEstimate(options: CompleteOptions): number {
  return sumPrompts(options, (text) => Math.ceil(Buffer.byteLength(text, "utf8") / 4));
}

/** FIM and beginning-of-sequence tokens the upstream adds around each prompt. */
const FIM_ALLOWANCE = 8;

function sumPrompts(options: CompleteOptions, count: (text: string) => number): number {
  const suffix = options.suffix === undefined ? 0 : count(options.suffix);
  return options.prompts.reduce((total, prompt) => total + (typeof prompt === "string" ? count(prompt) : prompt.length) + suffix, 0);
}
