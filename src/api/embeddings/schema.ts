import { z } from "zod";
import { Cost } from "../chat/schema.js";

/** POST /embeddings: the reference's CreateEmbeddingRequestSchema and its response. */

export const MAX_EMBEDDING_INPUTS = 2048;

export const CreateEmbeddingRequest = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string().min(1, "input cannot be an empty string"), z.array(z.string().min(1, "input strings cannot be empty")).min(1).max(MAX_EMBEDDING_INPUTS)]),
  encoding_format: z.enum(["float", "base64"]).default("float"),
  dimensions: z.number().int().min(1).optional(),
  user: z.string().optional(),
});
export type CreateEmbeddingRequest = z.infer<typeof CreateEmbeddingRequest>;

export const EmbeddingObject = z.object({
  object: z.literal("embedding"),
  index: z.number().int(),
  /** float: the vector; base64: little-endian float32 bytes, base64-encoded. */
  embedding: z.union([z.array(z.number()), z.string()]),
});

export const CreateEmbeddingResponse = z.object({
  object: z.literal("list"),
  data: z.array(EmbeddingObject),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
  /** What the request was charged (also in x-service-cost-usd / x-service-cost-diem). */
  cost: Cost,
});
export type CreateEmbeddingResponse = z.infer<typeof CreateEmbeddingResponse>;

/** Token-id inputs (numbers, or arrays of numbers) are refused with a 400 that says what to send instead. */
export function isTokenArrayInput(input: unknown): boolean {
  if (!Array.isArray(input) || input.length === 0) return false;
  return input.some((item) => typeof item === "number" || (Array.isArray(item) && item.every((t) => typeof t === "number")));
}
