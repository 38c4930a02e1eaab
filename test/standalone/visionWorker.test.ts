import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TransformersVisionChatEngine } from "../../src/engines/transformers/TransformersVisionChatEngine.js";
import { VisionGenerator } from "../../src/engines/transformers/VisionGenerator.js";
import { VisionPrompts } from "../../src/engines/transformers/VisionPrompts.js";
import type { ChatDelta, ChatGenerateOptions, ChatGenerateResult, DecodedImage, PlannedChat } from "../../src/engines/types.js";
import { ModelAtCapacityError } from "../../src/errors.js";
import { tinyVisionEntry } from "../helpers/testServer.js";

/**
 * Vision chat on a worker thread: requests are planned and generated on the engine's worker,
 * with the same answer as the planner and generator give in this thread, streamed piece by
 * piece, no onnxruntime inference on this thread, plans answered while a generation runs, and a
 * cancelled request ending where it was.
 */

/** A picture with some structure (gradients and a square), so the image tokens differ by tile. */
function picture(width: number, height: number): DecodedImage {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const inSquare = x > width / 4 && x < width / 2 && y > height / 3 && y < (2 * height) / 3;
      rgb[i] = (x * 255) / width;
      rgb[i + 1] = inSquare ? 250 : (y * 255) / height;
      rgb[i + 2] = (x + y) % 256;
    }
  }
  return { rgb, width, height };
}

const question = (maxTokens: number, extra: Partial<ChatGenerateOptions> = {}): ChatGenerateOptions => ({
  messages: [
    {
      role: "user",
      content: "What is in this picture?",
      parts: [
        { type: "text", text: "What is in this picture?" },
        { type: "image", source: {}, image: picture(160, 96) },
      ],
    },
  ],
  maxTokens,
  sampling: { temperature: 0 },
  ...extra,
});

const entry = tinyVisionEntry();
let engine: TransformersVisionChatEngine;
let prompts: VisionPrompts;
let inThread: VisionGenerator;
beforeAll(async () => {
  [engine, prompts] = await Promise.all([TransformersVisionChatEngine.load(entry, false), VisionPrompts.load(entry)]);
  inThread = await VisionGenerator.load(entry, false, prompts);
});
afterAll(async () => {
  await Promise.all([engine?.dispose(), inThread?.dispose()]);
});

/** What a result says regardless of timing. */
const withoutTimes = ({ queueMs: _q, timeToFirstTokenMs: _t, ...rest }: ChatGenerateResult) => rest;

describe("TransformersVisionChatEngine (generation on a worker thread)", () => {
  it("answers a picture question as the generator does in this thread, streaming every piece, with no inference on this thread", async () => {
    const options = question(24, { choices: 2, stop: ["zz"] });
    // Every onnxruntime run on this thread is counted; the worker has an onnxruntime of its own.
    const sessions = (ort.InferenceSession as unknown as { prototype: { run: (...args: unknown[]) => Promise<unknown> } }).prototype;
    const run = sessions.run;
    let runsOnThisThread = 0;
    sessions.run = function (this: unknown, ...args: unknown[]) {
      runsOnThisThread++;
      return run.apply(this, args);
    };
    try {
      const plan = await prompts.planChat(options);
      const here = await inThread.run(plan.prompts, 2, plan.maxTokens, options, {});
      // The count sees a generation in this thread: the encoder, then the decoder step by step.
      expect(runsOnThisThread).toBeGreaterThan(here.completionTokens);
      runsOnThisThread = 0;

      // Planning too: the image processor's resize and tiling are small onnxruntime graphs in transformers.js.
      const planned = await engine.plan(options);
      expect(planned.promptTokens).toBe(here.promptTokens);
      const streamed: [number, ChatDelta][] = [];
      let started = 0;
      const there = await planned.generate({ onStart: () => started++, onDelta: (choice, delta) => streamed.push([choice, delta]) });
      expect(withoutTimes(there)).toEqual(withoutTimes(here));
      expect(there.completionTokens).toBeGreaterThan(0);
      expect(started).toBe(1);
      for (const choice of there.choices) {
        const pieces = streamed.filter(([index]) => index === choice.index).map(([, delta]) => (delta.kind === "content" ? delta.text : ""));
        expect(pieces.join("")).toBe(choice.content);
      }
      expect(runsOnThisThread).toBe(0);
    } finally {
      sessions.run = run;
    }
  });

  it("ends a cancelled generation where it was and charges what it produced; a queued one leaves with the signal's reason", async () => {
    const controller = new AbortController();
    const planned = await engine.plan(question(400));
    let pieces = 0;
    let firstPiece: () => void = () => {};
    const producing = new Promise<void>((resolve) => (firstPiece = resolve));
    const running = planned.generate({
      signal: controller.signal,
      onDelta: () => {
        if (++pieces === 1) firstPiece();
      },
    });
    await producing;
    // A second request is planned while the first generates (a plan waiting behind it would find
    // the queue empty by then), then waits behind it; its client leaves before its turn.
    const waitingController = new AbortController();
    const waiting = (await engine.plan(question(8))).generate({ signal: waitingController.signal });
    expect(engine.stats()).toEqual({ sequences: 1, busy: 1, waiting: 1 });
    const waitingReason = new Error("gone before its turn");
    waitingController.abort(waitingReason);
    await expect(waiting).rejects.toBe(waitingReason);
    controller.abort(new Error("the client left"));

    const result = await running;
    expect(result.finishReason).toBe("abort");
    expect(result.completionTokens).toBeGreaterThanOrEqual(pieces);
    expect(result.choices[0]!.completionTokens).toBe(result.completionTokens);
    expect(result.completionTokens).toBeLessThan(400);
    expect(engine.stats()).toEqual({ sequences: 1, busy: 0, waiting: 0 });
    const next = await (await engine.plan(question(4))).generate({});
    expect(next.completionTokens).toBeGreaterThan(0);
  });

  it("plans completions on the worker, token ids as they are, and refuses what the model cannot do", async () => {
    const text = await engine.planCompletion({ prompts: ["Once upon a time", [5, 6, 7]], choices: 2, maxTokens: 6, sampling: { temperature: 0 }, echo: true });
    expect(text.choices).toBe(4);
    const reference = prompts.planCompletion({ prompts: ["Once upon a time", [5, 6, 7]], maxTokens: 6, echo: true });
    expect(text.promptTokens).toBe(reference.prompts[0]!.promptTokens + 3);
    const result = await text.generate({});
    expect(result.echoed?.[0]?.text).toBe("Once upon a time");
    expect(result.choices).toHaveLength(4);
    await expect(engine.planCompletion({ prompts: [[5, 999_999]], sampling: { temperature: 0 } })).rejects.toMatchObject({
      refusal: { kind: "tokenOutsideVocabulary", position: 1 },
    });
    await expect(engine.planCompletion({ prompts: ["x"], suffix: "y", sampling: { temperature: 0 } })).rejects.toMatchObject({ refusal: { kind: "noInfillTokens" } });
  });

  it("answers 503 at once to a burst past the queue, counting the requests being planned", async () => {
    const small = await TransformersVisionChatEngine.load(tinyVisionEntry({ id: "tiny-vision-small-queue", queue: { maxWaiting: 1 } }), false);
    try {
      const running = (await small.plan(question(200))).generate({});
      // One place left in the queue: of three picture questions at once, one is planned, two refused unplanned.
      const burst = await Promise.allSettled([small.plan(question(4)), small.plan(question(4)), small.plan(question(4))]);
      expect(burst.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected"]);
      for (const r of burst.slice(1)) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(ModelAtCapacityError);
      const admitted = (burst[0] as PromiseFulfilledResult<PlannedChat>).value;
      const [first, second] = await Promise.all([running, admitted.generate({})]);
      expect(first.completionTokens).toBeGreaterThan(0);
      expect(second.completionTokens).toBeGreaterThan(0);
    } finally {
      await small.dispose();
    }
  });

  it("bounds a prompt's characters by its tokenizer, soundly: text that long never fits the context", async () => {
    const longest = engine.maxPromptChars! / engine.contextSize;
    expect(Number.isInteger(longest)).toBe(true);
    const texts = ["plain words and spaces ".repeat(40), "数据中心的推理服务器".repeat(30), "🙂👍🏽🚀".repeat(50), "<image><fake_token_around_image><row_1_col_2>".repeat(20), "x"];
    for (const text of texts) {
      const [prompt] = prompts.planCompletion({ prompts: [text], maxTokens: 1 }).prompts;
      expect(prompt!.promptTokens * longest, text.slice(0, 12)).toBeGreaterThanOrEqual(text.length);
    }
  });

  it("refuses a directory that is not a vision-language model before starting a worker", async () => {
    await expect(TransformersVisionChatEngine.load(tinyVisionEntry({ file: "/nonexistent/vlm" }), false)).rejects.toThrow(/not an Idefics3\/SmolVLM model/);
  });
});
