import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TranscriptionSegment } from "../../src/engines/types.js";
import { WhisperEngine } from "../../src/engines/whisper/WhisperEngine.js";
import { WhisperWorkerEngine } from "../../src/engines/whisper/WhisperWorkerEngine.js";
import { tinyWhisperEntry } from "../helpers/testServer.js";

/**
 * Whisper on a worker thread: the same pipeline as in one thread (WhisperEngine runs there
 * whole), segments streamed back as they are decoded, and a cancelled signal honoured.
 */

const RATE = 16000;
/** A gliding tone of `seconds`: the tiny model writes a segment per 30 s window of it. */
const tone = (seconds: number) => Float32Array.from({ length: seconds * RATE }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (200 + (i % RATE) / 40) * i) / RATE));

let inThread: WhisperEngine;
let worker: WhisperWorkerEngine;
beforeAll(async () => {
  [inThread, worker] = await Promise.all([WhisperEngine.load(tinyWhisperEntry(), false), WhisperWorkerEngine.load(tinyWhisperEntry(), false)]);
});
afterAll(async () => {
  await Promise.all([inThread?.dispose(), worker?.dispose()]);
});

describe("WhisperWorkerEngine", () => {
  it("transcribes what the in-thread engine transcribes, sending each segment as it is decoded", async () => {
    expect(worker.sampleRate).toBe(inThread.sampleRate);
    expect(worker.supportsWordTimestamps).toBe(inThread.supportsWordTimestamps);
    expect(worker.supportsTranslation).toBe(inThread.supportsTranslation);
    const audio = tone(70);
    const options = { audio, language: "en", timestamps: ["segment", "word"] as const };
    const streamed: TranscriptionSegment[] = [];
    const [here, there] = await Promise.all([
      inThread.transcribe({ ...options, timestamps: [...options.timestamps] }),
      worker.transcribe({ ...options, timestamps: [...options.timestamps], onSegment: (s) => streamed.push(s) }),
    ]);
    expect(there).toEqual(here);
    expect(there.segments.length).toBe(3);
    expect(streamed).toEqual(there.segments);
    // The caller's audio is copied to the worker, not taken from it.
    expect(audio.length).toBe(70 * RATE);
  });

  it("stops at a cancelled signal with the signal's reason, and goes on serving", async () => {
    const controller = new AbortController();
    const reason = new Error("the client left");
    const cancelled = worker.transcribe({
      audio: tone(90),
      language: "en",
      timestamps: ["segment"],
      signal: controller.signal,
      // Cancel once the first window is decoded: the seek loop checks the signal before the next.
      onSegment: () => controller.abort(reason),
    });
    await expect(cancelled).rejects.toBe(reason);
    expect(worker.stats()).toEqual({ busy: 0, waiting: 0 });
    const next = await worker.transcribe({ audio: tone(5), language: "en", timestamps: ["segment"] });
    expect(next.segments.length).toBe(1);
  });

  it("makes audio given as a function only when the worker is free for it, and moves those samples there", async () => {
    const firstSegments: TranscriptionSegment[] = [];
    const first = worker.transcribe({ audio: async () => tone(70), language: "en", timestamps: ["segment"], onSegment: (s) => firstSegments.push(s) });
    let segmentsWhenMade: number | undefined;
    let made: Float32Array | undefined;
    const second = worker.transcribe({
      audio: async () => {
        segmentsWhenMade = firstSegments.length;
        made = tone(5);
        return made;
      },
      language: "en",
      timestamps: ["segment"],
    });
    expect(worker.stats()).toEqual({ busy: 1, waiting: 1 });
    const [firstResult, secondResult] = await Promise.all([first, second]);
    // The second request's samples did not exist while the first was transcribed.
    expect(firstResult.segments.length).toBe(3);
    expect(segmentsWhenMade).toBe(3);
    expect(secondResult).toEqual(await inThread.transcribe({ audio: tone(5), language: "en", timestamps: ["segment"] }));
    expect(made?.length).toBe(0);
  });

  it("fails with what the audio function throws, and goes on serving (on a worker and in one thread)", async () => {
    for (const engine of [worker, inThread]) {
      const refusal = new Error("longer than the model accepts");
      await expect(
        engine.transcribe({
          audio: async () => {
            throw refusal;
          },
          timestamps: [],
        }),
      ).rejects.toBe(refusal);
      expect((await engine.transcribe({ audio: async () => tone(5), language: "en", timestamps: ["segment"] })).segments.length).toBe(1);
    }
  });
});
