import { getEventListeners } from "node:events";
import { getLlama, type LlamaContextSequence, LlamaLogLevel } from "node-llama-cpp";
import { expect, it } from "vitest";
import { SequencePool } from "../../src/engines/llama/SequencePool.js";
import { tinyChatPath } from "../helpers/testServer.js";

/** node-llama-cpp's id of a sequence (private): the id llama.cpp batches by. */
const idOf = (sequence: LlamaContextSequence) => (sequence as unknown as { _sequenceId: number })._sequenceId;

it("with no cache to reuse, a request takes a sequence next to the busy ones (one decode pass per run of consecutive ids), else the least recently used", async () => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: tinyChatPath() });
  const context = await model.createContext({ contextSize: 128, sequences: 6, threads: 1 });
  try {
    const pool = new SequencePool(context, "tiny-chat", 4);
    const request = (text: string) => ({ prompt: model.tokenize(text), count: 1 });
    // Every sequence holds a short, different prompt; released oldest first in the order 2, 0, 4, 1, 5, 3.
    const all = await pool.acquire({ prompt: [], count: 6 });
    const byId = new Map(all.map((sequence) => [idOf(sequence), sequence]));
    expect([...byId.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    for (const [id, sequence] of byId) await sequence.evaluateWithoutGeneratingNewTokens(model.tokenize(`prompt number ${id}`));
    for (const id of [2, 0, 4, 1, 5, 3]) {
      pool.release(byId.get(id)!, { pinnedTokens: 0 });
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const first = await pool.acquire(request("something else entirely"));
    // Nothing busy: the least recently used, 2.
    expect(first.map(idOf)).toEqual([2]);
    // 2 is busy: of its neighbours 1 and 3, the least recently used (1), not the oldest overall (0).
    expect((await pool.acquire(request("a second stranger"))).map(idOf)).toEqual([1]);
    // 1 and 2 are busy: 0 and 3 are next to them; 0 is older.
    expect((await pool.acquire(request("a third stranger"))).map(idOf)).toEqual([0]);
    // A request for two takes 3 (next to 2), then 4 (next to 3).
    expect((await pool.acquire({ ...request("two choices"), count: 2 })).map(idOf)).toEqual([3, 4]);
  } finally {
    await context.dispose();
    await model.dispose();
  }
});

it("a request that waited for a sequence leaves no listener on its signal once served, failed or aborted", async () => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: tinyChatPath() });
  const context = await model.createContext({ contextSize: 128, sequences: 1, threads: 1 });
  try {
    const pool = new SequencePool(context, "tiny-chat", 4);
    const [only] = await pool.acquire({ prompt: [], count: 1 });
    // A request's deadline signal (withDeadline): Node keeps such a signal alive while it has an
    // abort listener, so a listener left behind kept the waiter and its prompt until the deadline.
    const deadline = () => AbortSignal.any([new AbortController().signal, AbortSignal.timeout(60_000)]);
    const served = deadline();
    const servedWait = pool.acquire({ prompt: model.tokenize("a prompt that waits"), count: 1, signal: served });
    expect(getEventListeners(served, "abort")).toHaveLength(1);
    pool.release(only!, { pinnedTokens: 0 });
    const [again] = await servedWait;
    expect(getEventListeners(served, "abort")).toHaveLength(0);

    const aborted = new AbortController();
    const abortedWait = pool.acquire({ prompt: [], count: 1, signal: aborted.signal });
    aborted.abort(new Error("the client left"));
    await expect(abortedWait).rejects.toThrow("the client left");
    expect(getEventListeners(aborted.signal, "abort")).toHaveLength(0);

    const failed = deadline();
    const failedWait = pool.acquire({ prompt: [], count: 1, signal: failed });
    pool.rejectWaiters(new Error("shutting down"));
    await expect(failedWait).rejects.toThrow("shutting down");
    expect(getEventListeners(failed, "abort")).toHaveLength(0);
    pool.release(again!, { pinnedTokens: 0 });
  } finally {
    await context.dispose();
    await model.dispose();
  }
});
