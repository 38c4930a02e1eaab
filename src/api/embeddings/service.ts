import type { ModelEntry } from "../../config/modelRegistry.js";
import { CooperativeSlicer } from "../../engines/cooperativeWork.js";
import { reduceDimensions } from "../../engines/embeddingMath.js";
import type { EmbeddingEngine } from "../../engines/types.js";
import { InvalidRequestError } from "../../errors.js";
import type { ModelLease, ModelManager } from "../../models/ModelManager.js";
import type { CreateEmbeddingRequest, CreateEmbeddingResponse } from "./schema.js";

export interface PreparedEmbedding {
  entry: ModelEntry;
  engine: EmbeddingEngine;
  /** Holds the model loaded until the route releases it. */
  lease: ModelLease<"embedding">;
  inputs: string[];
  /** Tokens per input, measured before anything runs. */
  tokens: number[];
  dimensions: number;
}

/** Wire request -> engine call -> wire response. */
export class EmbeddingService {
  constructor(private readonly models: ModelManager) {}

  entry(request: CreateEmbeddingRequest): ModelEntry {
    return this.models.get(request.model, "embedding");
  }

  async prepare(entry: ModelEntry, request: CreateEmbeddingRequest): Promise<PreparedEmbedding> {
    const lease = await this.models.acquire(entry.id, "embedding");
    const { engine } = lease;
    try {
      const inputs = typeof request.input === "string" ? [request.input] : request.input;
      const dimensions = request.dimensions ?? engine.dimensions;
      if (dimensions > engine.dimensions) {
        throw InvalidRequestError.forField(["dimensions"], `${entry.id} makes ${engine.dimensions}-dimensional embeddings; dimensions cannot exceed that`);
      }
      if (dimensions < engine.dimensions && !entry.embedding.supportsCustomDimensions) {
        throw InvalidRequestError.forField(["dimensions"], `${entry.id} does not support reduced dimensions; omit dimensions or send ${engine.dimensions}`);
      }
      const pathOf = (index: number) => (typeof request.input === "string" ? ["input"] : ["input", index]);
      // Refused by length before any tokenizer runs, where the vocabulary gives a sound bound.
      const maxChars = engine.maxInputChars;
      if (maxChars !== undefined) {
        const overLong = inputs.findIndex((input) => input.length > maxChars);
        if (overLong >= 0) {
          throw InvalidRequestError.forField(
            pathOf(overLong),
            `this input has ${inputs[overLong]!.length} characters; ${entry.id} takes at most ${engine.maxInputTokens} tokens per input, which is never more than ${maxChars} characters`,
          );
        }
      }
      // Counted input by input, the event loop free between them; a count past the limit stops early.
      const slicer = new CooperativeSlicer();
      const tokens: number[] = [];
      for (const [index, input] of inputs.entries()) {
        const [count] = await engine.countTokens([input], { stopAbove: engine.maxInputTokens });
        // A bound is no proof of a long input: a relay leaves that refusal to its upstream.
        if (count! > engine.maxInputTokens && !engine.countsAreBounds) {
          throw InvalidRequestError.forField(
            pathOf(index),
            `this input has more than ${engine.maxInputTokens} tokens; ${entry.id} takes at most ${engine.maxInputTokens} per input`,
          );
        }
        tokens.push(count!);
        await slicer.pause();
      }
      return { entry, engine, lease, inputs, tokens, dimensions };
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  async embed(prepared: PreparedEmbedding, request: CreateEmbeddingRequest, signal: AbortSignal): Promise<Omit<CreateEmbeddingResponse, "cost">> {
    const { vectors, tokens } = await prepared.engine.embed(prepared.inputs, { signal });
    // A relay measured bounds before the request; the upstream's own count is what was used.
    const promptTokens = (prepared.engine.countsAreBounds ? tokens : prepared.tokens).reduce((a, b) => a + b, 0);
    return {
      object: "list",
      data: vectors.map((vector, index) => {
        const reduced = reduceDimensions(vector, prepared.dimensions, prepared.entry.embedding.normalize);
        return { object: "embedding" as const, index, embedding: request.encoding_format === "base64" ? toBase64(reduced) : Array.from(reduced) };
      }),
      model: prepared.entry.id,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
  }
}

/** The standard's base64 encoding: the float32 values' little-endian bytes. */
export function toBase64(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64");
}
