import { describe, expect, it } from "vitest";
import { CheckedModelsConfig } from "../../src/models/loadModelsConfig.js";

const price = { usd: 1, diem: 1 };
const BACKEND_OF = { text: "llama", embedding: "transformers", tts: "kokoro", asr: "whisper", image: "onnx-diffusion", video: "onnx-diffusion" } as const;

/** The registry's verdict on one entry's pricing: undefined when accepted, else the message. */
function pricingIssue(type: keyof typeof BACKEND_OF, pricing: unknown): string | undefined {
  const parsed = CheckedModelsConfig.safeParse({ models: [{ id: "m", type, backend: BACKEND_OF[type], file: "/models/m", pricing }] });
  if (parsed.success) return undefined;
  return parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("\n");
}

describe("pricing in models.config.json: each model type takes its own shapes, checked once", () => {
  it.each([
    ["text", { input: price, output: price, cache_input: price }],
    ["embedding", { input: price }],
    ["embedding", { input: price, output: price }],
    ["tts", { per_thousand_characters: price }],
    ["tts", { input: price }],
    ["asr", { per_audio_second: price }],
    ["image", { generation: price, steps: { fast: { ...price, max_steps: 4 } } }],
    ["video", { per_second: price, resolutions: { "256p": price } }],
    ["video", { durations: { short: { ...price, min_seconds: 0, max_seconds: 5 } } }],
  ] as const)("accepts %s pricing %j", (type, pricing) => {
    expect(pricingIssue(type, pricing)).toBeUndefined();
  });

  it.each([
    ["text", { input: price }, "text models are priced per million input and output tokens"],
    ["tts", { per_audio_second: price }, "tts models are priced per thousand characters"],
    ["asr", { per_thousand_characters: price }, "asr models are priced per audio second"],
    ["image", { generation: { usd: -1, diem: 1 } }, "image models are priced per image"],
    ["video", { per_second: price, extra: 1 }, "video models are priced per second"],
    ["embedding", { generation: price }, "embedding models are priced per million input tokens"],
  ] as const)("refuses %s pricing %j, naming the shapes the type takes", (type, pricing, message) => {
    expect(pricingIssue(type, pricing)).toContain(`models.0.pricing: ${message}`);
  });

  it("refuses a pricing that is not an object", () => {
    expect(pricingIssue("text", "free")).toMatch(/models\.0\.pricing: expected a pricing object/);
  });
});
