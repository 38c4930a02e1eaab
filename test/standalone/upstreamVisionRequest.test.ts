import { describe, expect, it } from "vitest";
import type { ChatGenerateOptions } from "../../src/engines/types.js";
import { promptTokenBound, promptTokenEstimate, toUpstreamRequest } from "../../src/engines/upstream/toUpstreamRequest.js";

const features = {
  functionCalling: true,
  reasoning: false,
  reasoningToggle: false,
  responseSchema: true,
  logprobs: true,
  dynamicTemperature: false,
  maxChoices: 8,
  vocabularySize: 0,
  infill: true,
};

describe("a user message with pictures, relayed", () => {
  const picture = { type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(400_000)}`, detail: "low" }, cache_control: { type: "ephemeral" } };
  const options: ChatGenerateOptions = {
    messages: [
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: "Look.\n<file>notes</file>",
        parts: [
          { type: "text", text: "Look." },
          { type: "image", source: picture },
          { type: "text", text: "<file>notes</file>" },
        ],
      },
    ],
    sampling: { temperature: 0 },
  };
  const body = toUpstreamRequest(options, "up", features);

  it("sends the parts in order: text read here as text parts, the picture as the caller wrote it", () => {
    expect((body.messages as unknown[])[1]).toEqual({ role: "user", content: [{ type: "text", text: "Look." }, picture, { type: "text", text: "<file>notes</file>" }] });
  });

  it("holds a picture at a fixed allowance, not at its bytes (a 300 kB data URL is not 400,000 tokens)", () => {
    const bound = promptTokenBound(body);
    expect(bound).toBeGreaterThan(8192);
    expect(bound).toBeLessThan(10_000);
    // The estimate (billing without the upstream's usage): the text at four bytes a token, a typical picture's 1024.
    expect(promptTokenEstimate(body)).toBeGreaterThan(1024);
    expect(promptTokenEstimate(body)).toBeLessThan(1024 + 50);
  });
});
