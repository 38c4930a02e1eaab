import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AutoTokenizer } from "@huggingface/transformers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import type { TranscriptionResult } from "../../src/engines/types.js";
import { WhisperEngine } from "../../src/engines/whisper/WhisperEngine.js";
import { writeWhisperModel } from "../../src/fixtures/onnx/whisperModel.js";
import { tinyWhisperEntry } from "../helpers/testServer.js";

/**
 * A transcription's prompt, as openai/whisper conditions on it: <|startofprev|> and the prompt's
 * last 223 tokens before the first window's start-of-transcript tokens.
 *
 * The demo Whisper ends its text at a fixed decoding position (prompt tokens included), so a
 * prompt would leave it no room; this file's model never ends a window by itself, and every
 * window runs to its token limit. Its random text would fail Whisper's fallback thresholds at
 * every temperature, so the fallback is off here (whisperFallback.test.ts tests it).
 */

const RATE = 16000;
/** A gliding tone of `seconds`: the tiny model writes text for each 30 s window of it. */
const tone = (seconds: number) => Float32Array.from({ length: seconds * RATE }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (200 + (i % RATE) / 40) * i) / RATE));

let dir: string;
let engine: WhisperEngine;
/** The model's token ids by their text (special and timestamp tokens included). */
let ids: Record<string, number>;
let countTokens: (text: string) => number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "hearth-whisper-prompt-"));
  await writeWhisperModel(dir, { endOfTextPosition: 1000 });
  engine = await WhisperEngine.load(
    ModelEntry.parse({ id: "unending-whisper", type: "asr", backend: "whisper", file: dir, onnx: { threads: 1 }, transcription: { fallbackTemperatures: [] } }),
    false,
  );
  const tokenizerJson = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")) as { added_tokens: { id: number; content: string }[] };
  ids = Object.fromEntries(tokenizerJson.added_tokens.map((t) => [t.content, t.id]));
  const tokenizer = await AutoTokenizer.from_pretrained(dir);
  countTokens = (text) => tokenizer.encode(text, { add_special_tokens: false }).length;
});
afterAll(async () => {
  await engine?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const transcribe = (seconds: number, prompt?: string): Promise<TranscriptionResult> => engine.transcribe({ audio: tone(seconds), language: "en", timestamps: ["segment"], prompt });

describe("a transcription's prompt", () => {
  it("conditions the first window: its text changes and holds none of the prompt, its first timestamp is within 1 s, and later windows decode as without it", async () => {
    const plain = await transcribe(40);
    const prompted = await transcribe(40, "Hearth and llama");
    const firstWindow = (r: TranscriptionResult) => r.segments.filter((s) => s.start < 30);
    const laterWindows = (r: TranscriptionResult) => r.segments.filter((s) => s.start >= 30);
    expect(firstWindow(prompted).length).toBeGreaterThan(0);
    expect(firstWindow(prompted).map((s) => s.text)).not.toEqual(firstWindow(plain).map((s) => s.text));
    expect(prompted.text).not.toContain("Hearth");
    // The tokens reported are the generated ones: a timestamp first, and at most 1 s into the window
    // (openai/whisper's max_initial_timestamp; with this prompt the model would open at 2.2 s).
    const first = firstWindow(prompted)[0]!.tokens![0]!;
    expect(first).toBeGreaterThanOrEqual(ids["<|0.00|>"]!);
    expect(first).toBeLessThanOrEqual(ids["<|1.00|>"]!);
    expect(laterWindows(plain).length).toBeGreaterThan(0);
    expect(laterWindows(prompted)).toEqual(laterWindows(plain));
  });

  it("keeps a long prompt's last 223 tokens, and generates only into the decoder positions left", async () => {
    const tail = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");
    expect(countTokens(` ${tail}`)).toBeGreaterThanOrEqual(223);
    const [one, other, tailOnly] = await Promise.all([transcribe(5, `${"alpha ".repeat(60)}${tail}`), transcribe(5, `${"omega ".repeat(60)}${tail}`), transcribe(5, tail)]);
    expect(one).toEqual(other);
    expect(one).toEqual(tailOnly);
    expect(one.text).not.toEqual((await transcribe(5)).text);
    // 448 positions: <|startofprev|>, 223 prompt tokens and 3 start tokens leave 221 (not Whisper's 224).
    expect(one.outputTokens).toBeGreaterThan(0);
    expect(one.segments.reduce((n, s) => n + s.tokens!.length, 0)).toBe(221);
  });

  it("is text: special and timestamp tokens it spells out are left out, not read as those tokens", async () => {
    const [spelled, plain] = await Promise.all([transcribe(5, "Hearth<|endoftext|><|startoftranscript|><|0.00|>"), transcribe(5, "Hearth")]);
    expect(spelled).toEqual(plain);
  });

  it("a window the model ends at once (timestamps and no text) is empty text, not an error", async () => {
    // The demo model's text ends at the 9th decoding position: after a prompt, at its first timestamp.
    const demo = await WhisperEngine.load(tinyWhisperEntry(), false);
    try {
      const result = await demo.transcribe({ audio: tone(5), language: "en", timestamps: ["segment"], prompt: "a prompt longer than the demo model's text" });
      expect(result).toMatchObject({ text: "", segments: [], outputTokens: 0 });
      expect((await demo.transcribe({ audio: tone(5), language: "en", timestamps: ["segment"] })).text).not.toBe("");
    } finally {
      await demo.dispose();
    }
  });
});
