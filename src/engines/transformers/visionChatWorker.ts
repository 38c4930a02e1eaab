import { Tensor } from "@huggingface/transformers";
import { type PlanRefusal, PlanRefusalError } from "../PlanRefusal.js";
import type { ChatDelta } from "../types.js";
import type { EngineWorkerData } from "../worker/EngineOnWorker.js";
import { serveWorker } from "../worker/serveWorker.js";
import { VisionGenerator } from "./VisionGenerator.js";
import { type ChatPlanOptions, type CompletionPlanOptions, type GenerationSettings, type PreparedPrompt, VisionPrompts } from "./VisionPrompts.js";
import { promptsToWire, type WirePrompt } from "./visionWire.js";

/**
 * Worker-thread side of TransformersVisionChatEngine: planning (chat template, image processor,
 * tokenizer) and generation (vision encoder, the text decoder's step per token with its
 * key/value cache, the streamed text) all run here, so a picture question never holds the event
 * loop that serves chat streams and every other request. Plans come as pool calls, taken between
 * a running generation's steps; generations come one at a time through the pool's queue.
 */

export type VisionTask =
  | { kind: "plan-chat"; options: ChatPlanOptions }
  | { kind: "plan-completion"; options: CompletionPlanOptions }
  | { kind: "generate"; prompts: WirePrompt[]; count: number; maxTokens: number; settings: GenerationSettings };

/** A plan's answer: the prompts and each choice's budget, or what the model refuses. */
export type VisionPlan = { prompts: WirePrompt[]; maxTokens: number } | { refused: PlanRefusal };

/** What the worker sends while generating: that it started (the queue is behind it), then each piece of text. */
export type VisionEvent = { kind: "start" } | { kind: "delta"; choice: number; delta: ChatDelta };

export interface VisionWorkerInfo {
  executionProvider: VisionGenerator["executionProvider"];
}

function planned(plan: { prompts: PreparedPrompt[]; maxTokens: number }) {
  const { prompts, transfer } = promptsToWire(plan.prompts);
  return { result: { prompts, maxTokens: plan.maxTokens } satisfies VisionPlan, transfer };
}

function refused(error: unknown) {
  if (error instanceof PlanRefusalError) return { result: { refused: error.refusal } satisfies VisionPlan };
  throw error;
}

serveWorker<{ prompts: VisionPrompts; generator: VisionGenerator }, VisionTask>({
  async load(data) {
    const { entry, gpu } = data as EngineWorkerData;
    const prompts = await VisionPrompts.load(entry);
    const generator = await VisionGenerator.load(entry, gpu, prompts);
    const info: VisionWorkerInfo = { executionProvider: generator.executionProvider };
    return { context: { prompts, generator }, info };
  },

  async run({ prompts, generator }, task, io) {
    if (task.kind === "plan-chat") return prompts.planChat(task.options).then(planned, refused);
    if (task.kind === "plan-completion") {
      try {
        return planned(prompts.planCompletion(task.options));
      } catch (error) {
        return refused(error);
      }
    }
    const inputs = task.prompts.map(({ inputs, promptTokens }) => ({
      inputs: Object.fromEntries(Object.entries(inputs).map(([name, t]) => [name, new Tensor(t.type, t.data as never, t.dims)])),
      promptTokens,
    }));
    const result = await generator.run(inputs, task.count, task.maxTokens, task.settings, {
      signal: io.signal,
      onStart: () => io.emit({ kind: "start" } satisfies VisionEvent),
      onDelta: (choice, delta) => io.emit({ kind: "delta", choice, delta } satisfies VisionEvent),
    });
    return { result };
  },
});
