import { resolveChatWrapper, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import type { LlamaSettings } from "../../src/config/backendSettings.js";
import { chatContextOptions, getSharedLlama } from "../../src/engines/llama/getSharedLlama.js";
import { LlamaChatEngine, promptHistory, promptRenderingFor } from "../../src/engines/llama/LlamaChatEngine.js";
import type { RequestTrace } from "./metrics.js";
import { SAMPLING, type BenchRequest, type RunRequest } from "./workload.js";

export interface Target {
  run: RunRequest;
  dispose(): Promise<void>;
  /** node-llama-cpp alone: its native decode and sampling calls so far (calls, milliseconds awaited in all). */
  nativeCalls?(): NativeCalls;
}

/**
 * node-llama-cpp's two native jobs per step, timed from the call to the settled promise: each
 * runs on libuv's pool and comes back through the event loop, so what it takes beyond llama.cpp's
 * own work is that trip. With a whole model on a GPU the decode returns before the GPU is done
 * and the sampling waits for it, so the two together are the step.
 */
export interface NativeCalls {
  decodeBatch: { calls: number; ms: number };
  sampleToken: { calls: number; ms: number };
}

/**
 * Times the context's native `decodeBatch` and `sampleToken` (node-llama-cpp's internal AddonContext).
 * The timed wrappers are own properties of that object, defined over the prototype's methods, so the
 * object itself, which node-llama-cpp also hands to native code, stays the same.
 */
function timeNativeCalls(context: LlamaContext): () => NativeCalls {
  const calls: NativeCalls = { decodeBatch: { calls: 0, ms: 0 }, sampleToken: { calls: 0, ms: 0 } };
  const addon = (context as unknown as { _ctx: Record<keyof NativeCalls, (...args: unknown[]) => Promise<unknown>> })._ctx;
  for (const name of ["decodeBatch", "sampleToken"] as const) {
    const original = addon[name];
    Object.defineProperty(addon, name, {
      value: (...args: unknown[]) => {
        const startedAt = performance.now();
        return original.apply(addon, args).finally(() => {
          calls[name].calls++;
          calls[name].ms += performance.now() - startedAt;
        });
      },
    });
  }
  return () => structuredClone(calls);
}

/** What a context actually got (node-llama-cpp resolves defaults such as threads), for the report. */
export interface ContextInfo {
  threads: number;
  /** CPU cores llama.cpp counts as useful for math. */
  cpuMathCores: number;
  batchSize: number;
  contextSize: number;
  sequences: number;
  backend: string;
  /** "prebuilt" or "localBuild": whether a local `node-llama-cpp source build` is in use. */
  build: string;
}

/**
 * The floor: node-llama-cpp alone. The prompt is rendered and tokenized before timing
 * starts; each request is a `sequence.evaluate` loop with the engine's greedy sampling over a
 * context with the same settings, reusing the longest cached prompt prefix, and waiting in
 * FIFO order when every sequence is busy (c > sequences).
 */
export async function loadLlamaTarget(file: string, settings: LlamaSettings, gpu: "auto" | false): Promise<Target & { info: ContextInfo }> {
  // The server's binding, so the comparison isolates the layers above llama.cpp.
  const llama = await getSharedLlama(gpu);
  const model = await llama.loadModel({ modelPath: file, gpuLayers: settings.gpuLayers });
  const context = await model.createContext(chatContextOptions(settings));
  const nativeCalls = timeNativeCalls(context);
  const sequences = new SequenceQueue(context);
  const render = promptRenderer(model);

  const run = async (request: BenchRequest): Promise<RequestTrace> => {
    const prompt = render(request);
    const startedAt = performance.now();
    const sequence = await sequences.acquire(prompt);
    const outputTimes: number[] = [];
    let finishReason = "length";
    try {
      const reusable = Math.min(sequence.compareContextTokens(prompt).firstDifferentIndex, prompt.length - 1);
      if (sequence.nextTokenIndex > reusable) await sequence.eraseContextTokenRanges([{ start: reusable, end: sequence.nextTokenIndex }]);
      const tokens = sequence.evaluate(prompt.slice(sequence.nextTokenIndex), { ...SAMPLING, yieldEogToken: true });
      for await (const token of tokens) {
        if (model.isEogToken(token)) {
          finishReason = "stop";
          break;
        }
        outputTimes.push(performance.now());
        if (outputTimes.length >= request.maxTokens) break;
      }
    } finally {
      sequences.release(sequence);
    }
    return { startedAt, outputTimes, endedAt: performance.now(), promptTokens: prompt.length, completionTokens: outputTimes.length, finishReason };
  };

  return {
    run,
    info: describeContext(context),
    nativeCalls,
    dispose: async () => {
      await context.dispose();
      await model.dispose();
    },
  };
}

/** Hearth's chat engine in-process: the llama floor plus templating, planning, detokenizing and stop handling. */
export async function loadEngineTarget(file: string, settings: LlamaSettings, maxWaiting: number, gpu: "auto" | false): Promise<Target> {
  const engine = await LlamaChatEngine.load({ modelId: "bench", file, settings, maxWaiting, gpu });
  const run = async (request: BenchRequest): Promise<RequestTrace> => {
    const outputTimes: number[] = [];
    const startedAt = performance.now();
    const planned = engine.plan({ messages: request.messages, maxTokens: request.maxTokens, sampling: SAMPLING });
    const result = await planned.generate({
      // What an SSE client sees as content or reasoning_content chunks.
      onDelta: (_choice, delta) => {
        if ((delta.kind === "content" || delta.kind === "reasoning") && delta.text) outputTimes.push(performance.now());
      },
    });
    return {
      startedAt,
      outputTimes,
      endedAt: performance.now(),
      promptTokens: result.promptTokens,
      completionTokens: result.completionTokens,
      finishReason: result.finishReason,
    };
  };
  return { run, dispose: () => engine.dispose() };
}

/**
 * A context's sequences handed out in FIFO order; a free sequence sharing the longest prefix
 * with the prompt is preferred, so a shared system prompt stays cached as it would in a server.
 */
class SequenceQueue {
  private readonly free: LlamaContextSequence[];
  private readonly waiting: ((sequence: LlamaContextSequence) => void)[] = [];

  constructor(context: LlamaContext) {
    this.free = Array.from({ length: context.totalSequences }, () => context.getSequence());
  }

  acquire(prompt: Token[]): Promise<LlamaContextSequence> {
    if (this.free.length === 0) return new Promise((resolve) => this.waiting.push(resolve));
    const shared = this.free.map((sequence) => sequence.compareContextTokens(prompt).firstDifferentIndex);
    const best = shared.indexOf(Math.max(...shared));
    return Promise.resolve(this.free.splice(best, 1)[0]!);
  }

  release(sequence: LlamaContextSequence): void {
    const next = this.waiting.shift();
    if (next) next(sequence);
    else this.free.push(sequence);
  }
}

/** The prompt tokens LlamaChatEngine.renderPrompt produces for the same messages (no tools). */
function promptRenderer(model: LlamaModel): (request: BenchRequest) => Token[] {
  const chatWrapper = resolveChatWrapper(model);
  const rendering = promptRenderingFor(chatWrapper, model);
  return (request) => chatWrapper.generateContextState({ chatHistory: promptHistory(request.messages, rendering) }).contextText.tokenize(model.tokenizer);
}

function describeContext(context: LlamaContext): ContextInfo {
  const llama = context.model.llama;
  return {
    threads: context.idealThreads,
    cpuMathCores: llama.cpuMathCores,
    batchSize: context.batchSize,
    contextSize: context.contextSize,
    sequences: context.totalSequences,
    backend: `llama.cpp/${llama.gpu || "cpu"}`,
    build: llama.buildType,
  };
}
