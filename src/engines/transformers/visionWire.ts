import type { TransferListItem } from "node:worker_threads";
import type { Tensor } from "@huggingface/transformers";

// How vision chat's prepared prompts cross between the main thread and the engine's worker.
// No transformers.js at run time here: the main thread never loads it for vision chat.

/** A tensor as it crosses threads (transformers.js' Tensor is a class): its data moves, it is not copied. */
export interface WireTensor {
  type: Tensor["type"];
  data: Tensor["data"];
  dims: number[];
}

/** A prepared prompt as it crosses threads. */
export interface WirePrompt {
  inputs: Record<string, WireTensor>;
  promptTokens: number;
  text: string;
}

/** Prompts as they cross threads, and the buffers that move with them (each once: a transfer list may not repeat one). */
export function promptsToWire(prompts: readonly { inputs: Record<string, Tensor | WireTensor>; promptTokens: number; text: string }[]): {
  prompts: WirePrompt[];
  transfer: TransferListItem[];
} {
  const buffers = new Set<ArrayBuffer>();
  const wire = prompts.map(({ inputs, promptTokens, text }) => ({
    inputs: Object.fromEntries(
      Object.entries(inputs).map(([name, tensor]) => {
        const data = tensor.data as ArrayBufferView;
        if (data.buffer instanceof ArrayBuffer) buffers.add(data.buffer);
        return [name, { type: tensor.type, data: tensor.data, dims: [...tensor.dims] }];
      }),
    ),
    promptTokens,
    text,
  }));
  return { prompts: wire, transfer: [...buffers] };
}
