import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as ort from "onnxruntime-node";
import { GraphBuilder } from "../../src/engines/onnx/graphBuilder.js";
import { loadWithSessionsOffThread, OffThreadSession } from "../../src/engines/onnx/OffThreadSession.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * ONNX sessions on worker threads. onnxruntime-node runs an inference synchronously on the
 * thread that asks for it; these tests run a real graph both ways and watch the event loop:
 * on the main thread it stands still for the whole inference, off it it keeps turning.
 */

const SIZE = 256;
const STEPS = 120;

/** y = x · A · A · … (STEPS products of SIZE × SIZE matrices): some tens of milliseconds of work on one thread. */
function chainedProducts(): Uint8Array {
  const graph = new GraphBuilder("chained-products");
  const x = graph.input("x", "float32", [SIZE, SIZE]);
  const a = graph.input("a", "float32", [SIZE, SIZE]);
  let y = x;
  for (let i = 0; i < STEPS; i++) y = graph.op("MatMul", [y, a]);
  graph.output(y, "y", "float32", [SIZE, SIZE]);
  return graph.toModelBytes();
}

const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled" };

function feeds(): Record<string, ort.Tensor> {
  const x = new Float32Array(SIZE * SIZE).map((_, i) => ((i * 7919) % 101) / 101);
  // Rows of A sum to one, so the chain neither vanishes nor overflows.
  const a = new Float32Array(SIZE * SIZE).fill(1 / SIZE);
  return { x: new ort.Tensor("float32", x, [SIZE, SIZE]), a: new ort.Tensor("float32", a, [SIZE, SIZE]) };
}

/** Runs `work` and counts how often a 1 ms timer fired on this thread before it finished. */
async function loopTurnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  const timer = setInterval(() => turns++, 1);
  try {
    const value = await work();
    return { value, turns };
  } finally {
    clearInterval(timer);
  }
}

/** A load's choice as a generative export would make it: encoders off this thread, the per-token decoder on it. */
const encodersOnly = (modelFile: string) => !/decoder_model[^/]*\.onnx$/.test(modelFile);

const opened: { release(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.release()));
});

describe("OffThreadSession", () => {
  it("computes what an in-thread session computes, while this thread keeps serving", async () => {
    const model = chainedProducts();
    const inThread = await ort.InferenceSession.create(model, options);
    const offThread = await OffThreadSession.create(model, options);
    opened.push(inThread, offThread);
    expect(offThread.inputNames).toEqual(["x", "a"]);
    expect(offThread.outputNames).toEqual(["y"]);

    // Warm both (first runs allocate), then measure.
    await inThread.run(feeds());
    await offThread.run(feeds());
    const here = await loopTurnsDuring(() => inThread.run(feeds()));
    const there = await loopTurnsDuring(() => offThread.run(feeds()));

    const expected = here.value.y!;
    const actual = there.value.y!;
    expect(actual).toBeInstanceOf(ort.Tensor);
    expect(actual.type).toBe("float32");
    expect(actual.dims).toEqual([SIZE, SIZE]);
    expect(Array.from(actual.data as Float32Array)).toEqual(Array.from(expected.data as Float32Array));

    // On this thread the inference is one synchronous call: no timer gets a turn inside it.
    expect(here.turns).toBeLessThanOrEqual(1);
    expect(there.turns).toBeGreaterThanOrEqual(5);
  });

  it("reports onnxruntime's error for a bad input and keeps serving", async () => {
    const session = await OffThreadSession.create(chainedProducts(), options);
    opened.push(session);
    const wrong = { x: new ort.Tensor("float32", new Float32Array(4), [2, 2]), a: feeds().a! };
    await expect(session.run(wrong)).rejects.toThrow(/dimension|shape|Got invalid/i);
    const { y } = await session.run(feeds());
    expect(y!.dims).toEqual([SIZE, SIZE]);
  });

  it("keeps the caller's input tensors intact", async () => {
    const session = await OffThreadSession.create(chainedProducts(), options);
    opened.push(session);
    const input = feeds();
    const before = Array.from(input.x!.data as Float32Array);
    await session.run(input);
    expect((input.x!.data as Float32Array).length).toBe(SIZE * SIZE);
    expect(Array.from(input.x!.data as Float32Array)).toEqual(before);
  });

  it("refuses runs after release, and a model it cannot open", async () => {
    const session = await OffThreadSession.create(chainedProducts(), options);
    await session.release();
    await session.release();
    await expect(session.run(feeds())).rejects.toThrow(/released/);
    await expect(OffThreadSession.create("/nonexistent/model.onnx", options)).rejects.toThrow(/nonexistent|No such file|Load model/i);
  });

  it("opens the sessions a load's choice accepts on one worker thread, and no other session", async () => {
    const dir = testTempDir("off-thread-sessions");
    const [encoder, visionEncoder, decoder] = ["encoder_model.onnx", "vision_encoder_quantized.onnx", "decoder_model_merged.onnx"].map((name) => {
      writeFileSync(join(dir, name), chainedProducts());
      return join(dir, name);
    }) as [string, string, string];
    // Two loads at once, one of them outside any choice: what transformers.js does inside each.
    const [inLoad, outside] = await Promise.all([
      loadWithSessionsOffThread(encodersOnly, async () => ({
        encoder: await ort.InferenceSession.create(encoder, options),
        visionEncoder: await ort.InferenceSession.create(visionEncoder, options),
        decoder: await ort.InferenceSession.create(decoder, options),
      })),
      (async () => ort.InferenceSession.create(encoder, options))(),
    ]);
    opened.push(inLoad.visionEncoder, inLoad.decoder, outside);
    expect(inLoad.encoder).toBeInstanceOf(OffThreadSession);
    expect(inLoad.visionEncoder).toBeInstanceOf(OffThreadSession);
    expect(inLoad.decoder).not.toBeInstanceOf(OffThreadSession);
    expect(outside).not.toBeInstanceOf(OffThreadSession);
    // The two share a worker: releasing one leaves the other running.
    await inLoad.encoder.run(feeds());
    await inLoad.encoder.release();
    await expect(inLoad.encoder.run(feeds())).rejects.toThrow(/released/);
    const { y } = await inLoad.visionEncoder.run(feeds());
    expect(y!.dims).toEqual([SIZE, SIZE]);
  });

  it("ends the worker of a load that fails after opening sessions on it", async () => {
    const dir = testTempDir("off-thread-failed-load");
    const encoder = join(dir, "encoder_model.onnx");
    writeFileSync(encoder, chainedProducts());
    let leftBehind: ort.InferenceSession | undefined;
    await expect(
      loadWithSessionsOffThread(encodersOnly, async () => {
        leftBehind = await ort.InferenceSession.create(encoder, options);
        await leftBehind.run(feeds());
        throw new Error("the tokenizer is missing");
      }),
    ).rejects.toThrow(/tokenizer is missing/);
    expect(leftBehind).toBeInstanceOf(OffThreadSession);
    // Nobody holds the session the failed load opened; it must not keep running (and its weights).
    await expect(leftBehind!.run(feeds())).rejects.toThrow(/load that opened this session failed/);
  });
});
