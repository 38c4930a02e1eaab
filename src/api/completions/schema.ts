import { z } from "zod";
import { Cost, LogitBias, Usage } from "../chat/schema.js";

/**
 * POST /completions: the standard's legacy text completions. The prompt is raw text given
 * to the model as it is (no chat template). Undocumented request fields pass through
 * unvalidated (looseObject), as for chat.
 */

const TokenIds = z.array(z.number().int().min(0)).min(1);

const Prompt = z.union([
  z.string(),
  z.array(z.string()).min(1, "prompt must hold at least one string"),
  TokenIds,
  z.array(TokenIds).min(1, "prompt must hold at least one token list"),
]);

const Stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();

export const CompletionRequest = z
  .looseObject({
    model: z.string().min(1),
    prompt: Prompt,
    /** Fill-in-the-middle: the text after the gap (the prompt is the text before it); needs a model with FIM tokens. */
    suffix: z.string().nullish(),
    /** The standard's default is 16. */
    max_tokens: z.number().int().min(0).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    n: z.number().int().min(1).max(128).nullish(),
    stop: Stop,
    stream: z.boolean().nullish(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
    /** The legacy shape: log probabilities of each token and this many most likely alternatives (0 to 5). */
    logprobs: z.number().int().min(0).max(5).nullish(),
    /** Put the prompt in front of the completion's text (and, with logprobs, its tokens in front of the log probabilities). */
    echo: z.boolean().nullish(),
    seed: z.number().int().min(0).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    user: z.string().nullish(),
    /** Candidates generated per prompt; the n with the highest log probability per token are returned (not with stream). */
    best_of: z.number().int().min(1).max(128).nullish(),
    logit_bias: LogitBias,
  })
  .superRefine((body, ctx) => {
    if (body.best_of != null && body.best_of < (body.n ?? 1)) {
      ctx.addIssue({ code: "custom", path: ["best_of"], message: "best_of must be at least n" });
    }
    if (body.best_of != null && body.best_of > (body.n ?? 1) && body.stream === true) {
      // As the standard: the best candidates are known only once every one has finished.
      ctx.addIssue({ code: "custom", path: ["best_of"], message: "best_of above n cannot be streamed: the best candidates are known only once all have finished" });
    }
  });
export type CompletionRequest = z.infer<typeof CompletionRequest>;

/** The legacy log probabilities: parallel lists, one entry per token; text_offset is each token's character offset in the prompt and text together. */
export const CompletionLogprobs = z.object({
  tokens: z.array(z.string()),
  /** null for the first token of an echoed prompt (nothing precedes it). */
  token_logprobs: z.array(z.number().nullable()),
  top_logprobs: z.array(z.record(z.string(), z.number()).nullable()),
  text_offset: z.array(z.number().int()),
});
export type CompletionLogprobs = z.infer<typeof CompletionLogprobs>;

const FinishReason = z.enum(["stop", "length"]);

/** One choice's text; in a stream its finish reason stays null until its last event. */
const CompletionChoice = z.object({
  index: z.number().int(),
  text: z.string(),
  logprobs: CompletionLogprobs.nullable(),
  finish_reason: FinishReason,
});

export const CompletionResponse = z.object({
  id: z.string(),
  object: z.literal("text_completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(CompletionChoice),
  usage: Usage,
  cost: Cost,
});
export type CompletionResponse = z.infer<typeof CompletionResponse>;

/** A stream event: the same object type, each choice carrying the new text; the last ones carry the finish reason, then (include_usage) a choice-less usage event. */
export const CompletionChunk = z.object({
  id: z.string(),
  object: z.literal("text_completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(CompletionChoice.extend({ finish_reason: FinishReason.nullable() })),
  usage: Usage.nullable().optional(),
  cost: Cost.optional(),
});
export type CompletionChunk = z.infer<typeof CompletionChunk>;
