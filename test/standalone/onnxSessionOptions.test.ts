import * as ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { GraphBuilder } from "../../src/engines/onnx/graphBuilder.js";
import { engineSessionOptions, sessionOptions } from "../../src/engines/onnx/onnxSession.js";

/**
 * A model's onnx settings as onnxruntime session options: threads, and the CPU memory arena,
 * which "auto" leaves on except where the engine says its default is off (vision chat: the arena
 * held 5.2 GB after picture questions on a SmolVLM-256M shape, 1.9 GB without it).
 */

const onnx = (settings: Record<string, unknown>) => ModelEntry.parse({ id: "m", type: "asr", backend: "whisper", file: "/x", onnx: settings }).onnx;

describe("onnx.memoryArena", () => {
  it("is auto unless set, true or false, and nothing else", () => {
    expect(onnx({}).memoryArena).toBe("auto");
    expect(onnx({ memoryArena: false }).memoryArena).toBe(false);
    expect(onnx({ memoryArena: true }).memoryArena).toBe(true);
    expect(() => onnx({ memoryArena: "off" })).toThrow();
  });

  it("turns the arena off where the setting, or for auto the engine's default, says so; threads as set", () => {
    expect(engineSessionOptions(onnx({}))).toEqual({});
    expect(engineSessionOptions(onnx({}), false)).toEqual({ enableCpuMemArena: false });
    expect(engineSessionOptions(onnx({ memoryArena: true }), false)).toEqual({});
    expect(engineSessionOptions(onnx({ memoryArena: false, threads: 3 }))).toEqual({ intraOpNumThreads: 3, enableCpuMemArena: false });
    expect(sessionOptions(onnx({ memoryArena: false }), ["cpu"]).enableCpuMemArena).toBe(false);
    expect(sessionOptions(onnx({}), ["cpu"])).not.toHaveProperty("enableCpuMemArena");
  });

  it("is an option onnxruntime takes: a session without the arena computes what one with it does", async () => {
    const graph = new GraphBuilder("double");
    const x = graph.input("x", "float32", [4]);
    graph.output(graph.op("Add", [x, x]), "y", "float32", [4]);
    const bytes = graph.toModelBytes();
    const feeds = { x: new ort.Tensor("float32", Float32Array.from([1, 2, 3, 4]), [4]) };
    const withArena = await ort.InferenceSession.create(bytes, sessionOptions(onnx({}), ["cpu"]));
    const without = await ort.InferenceSession.create(bytes, sessionOptions(onnx({ memoryArena: false }), ["cpu"]));
    const [a, b] = [await withArena.run(feeds), await without.run(feeds)];
    expect(Array.from(b.y!.data as Float32Array)).toEqual([2, 4, 6, 8]);
    expect(Array.from(b.y!.data as Float32Array)).toEqual(Array.from(a.y!.data as Float32Array));
    await Promise.all([withArena.release(), without.release()]);
  });
});
