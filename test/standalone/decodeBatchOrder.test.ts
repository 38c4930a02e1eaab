import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { expect, it } from "vitest";
import { threadsForBatch } from "../../src/engines/llama/threadsForBatch.js";
import { tinyChatPath } from "../helpers/testServer.js";

/**
 * node-llama-cpp keeps one KV cache stream per sequence (kv_unified off), and llama.cpp then
 * cuts a decode batch into one micro-batch per run of consecutive sequence ids, each a whole
 * pass over the weights. Hearth's patch (patches/node-llama-cpp+*.patch, applied by
 * patch-package at install) adds a batch's sequences in ascending id order, so lock-step
 * sequences decode in one pass. This watches the native calls of a real context.
 */
it("node-llama-cpp adds the sequences of every decode batch in ascending id order (the install-time patch is applied)", async () => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: tinyChatPath() });
  const context = await model.createContext({ contextSize: 256, sequences: 4, threads: 1 });
  try {
    // The native context is node-llama-cpp's private object: a proxy records what each batch is given.
    const internals = context as unknown as { _ctx: Record<string | symbol, unknown> };
    const native = internals._ctx;
    const batches: number[][] = [];
    internals._ctx = new Proxy(native, {
      get(target, property) {
        const value = target[property];
        if (property === "initBatch") batches.push([]);
        if (property === "addToBatch") {
          return (sequenceId: number, ...rest: unknown[]) => {
            batches.at(-1)!.push(sequenceId);
            return (value as (...args: unknown[]) => unknown).call(target, sequenceId, ...rest);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const sequences = [0, 1, 2, 3].map(() => context.getSequence());
    // Started in descending order, with prompts of different lengths, so arrival order is not id order.
    await Promise.all(
      [...sequences].reverse().map(async (sequence, index) => {
        let generated = 0;
        for await (const _token of sequence.evaluate(model.tokenize("word ".repeat(3 + index * 5)), { temperature: 0 })) {
          if (++generated === 24) break;
        }
      }),
    );
    const shared = batches.filter((ids) => ids.length > 1);
    expect(shared.length).toBeGreaterThan(10);
    for (const ids of shared) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  } finally {
    await context.dispose();
    await model.dispose();
  }
});

it("node-llama-cpp decodes each batch with the threads batching.threadsForBatch gives it (the install-time patch)", async () => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: tinyChatPath() });
  const context = await model.createContext({
    contextSize: 256,
    sequences: 2,
    threads: 2,
    // Hearth's rule on a 2-core machine: one thread for a lone token, both for more.
    batching: { threadsForBatch: threadsForBatch("auto", 2) },
  });
  try {
    const internals = context as unknown as { _ctx: Record<string | symbol, unknown> };
    const native = internals._ctx;
    const calls: { batchSize: number; threads: number }[] = [];
    let batchSize = 0;
    internals._ctx = new Proxy(native, {
      get(target, property) {
        const value = target[property];
        if (typeof value !== "function") return value;
        if (property === "initBatch") {
          return (size: number) => {
            batchSize = size;
            return value.call(target, size);
          };
        }
        if (property === "setThreads") {
          return (threads: number) => {
            calls.push({ batchSize, threads });
            return value.call(target, threads);
          };
        }
        return value.bind(target);
      },
    });
    const sequence = context.getSequence();
    let generated = 0;
    for await (const _token of sequence.evaluate(model.tokenize("word ".repeat(12)), { temperature: 0 })) if (++generated === 8) break;
    expect(calls.length).toBeGreaterThan(5);
    // The prompt on both threads, every generated token on one.
    expect(calls[0]!.batchSize).toBeGreaterThan(1);
    expect(calls[0]!.threads).toBe(2);
    for (const call of calls.slice(1)) expect(call).toEqual({ batchSize: 1, threads: 1 });
  } finally {
    await context.dispose();
    await model.dispose();
  }
});
