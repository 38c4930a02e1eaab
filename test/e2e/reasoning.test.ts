import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, startTestServer, tinyReasoningEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyReasoningEntry()] });
});
afterAll(() => server.stop());

const ask = [{ role: "user" as const, content: "Why is the sky blue?" }];

interface Completion {
  model: string;
  choices: { message: { content: string | null; reasoning_content: string | null }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; completion_tokens_details: { reasoning_tokens: number } };
  service_parameters: Record<string, unknown>;
}
async function complete(body: Record<string, unknown>): Promise<Completion> {
  const res = await post(server, "/chat/completions", { model: "tiny-reasoning", messages: ask, max_tokens: 40, temperature: 0, ...body });
  expect(res.status).toBe(200);
  return (await res.json()) as Completion;
}

describe("reasoning models: thought blocks", () => {
  it("splits the <think> block into reasoning_content and counts its tokens", async () => {
    // reasoning_effort low opens a thought block and lets it take at most a quarter of max_tokens.
    const completion = await complete({ reasoning_effort: "low" });
    const { message } = completion.choices[0]!;
    expect(message.reasoning_content!.length).toBeGreaterThan(0);
    expect(message.content!.length).toBeGreaterThan(0);
    expect(message.content).not.toContain("<think>");
    expect(message.content).not.toContain("</think>");
    const reasoning = completion.usage.completion_tokens_details.reasoning_tokens;
    expect(reasoning).toBeGreaterThanOrEqual(5);
    expect(reasoning).toBeLessThanOrEqual(10 + 4); // the budget plus the tags
    expect(completion.usage.completion_tokens).toBe(40);
  });

  it("accepts the reasoning object too; a higher effort thinks longer", async () => {
    const low = await complete({ reasoning: { effort: "low" } });
    const high = await complete({ reasoning: { effort: "high" } });
    expect(high.usage.completion_tokens_details.reasoning_tokens).toBeGreaterThan(low.usage.completion_tokens_details.reasoning_tokens);
  });

  it("streams reasoning as reasoning_content deltas before the answer, matching the non-streamed split", async () => {
    const whole = await complete({ reasoning_effort: "medium" });
    const stream = await server.openai().chat.completions.create({
      model: "tiny-reasoning",
      messages: ask,
      max_tokens: 40,
      temperature: 0,
      reasoning_effort: "medium",
      stream: true,
    });
    let reasoning = "";
    let content = "";
    let order = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        if (!order.endsWith("r")) order += "r";
      }
      if (delta?.content) {
        content += delta.content;
        if (!order.endsWith("c")) order += "c";
      }
    }
    expect(order).toBe("rc");
    expect(reasoning).toBe(whole.choices[0]!.message.reasoning_content);
    expect(content).toBe(whole.choices[0]!.message.content);
  });

  it("strip_thinking_response removes the thought from the response (the tokens are still counted)", async () => {
    const shown = await complete({ reasoning_effort: "low" });
    const stripped = await complete({ reasoning_effort: "low", service_parameters: { strip_thinking_response: true } });
    expect(stripped.choices[0]!.message.reasoning_content).toBeNull();
    expect(stripped.choices[0]!.message.content).toBe(shown.choices[0]!.message.content);
    expect(stripped.usage.completion_tokens_details.reasoning_tokens).toBe(shown.usage.completion_tokens_details.reasoning_tokens);
    expect(stripped.service_parameters.strip_thinking_response).toBe(true);

    const stream = await server.openai().chat.completions.create({
      model: "tiny-reasoning",
      messages: ask,
      max_tokens: 40,
      temperature: 0,
      reasoning_effort: "low",
      stream: true,
      service_parameters: { strip_thinking_response: true },
    } as never);
    let sawReasoning = false;
    for await (const chunk of stream as unknown as AsyncIterable<{ choices: { delta: Record<string, unknown> }[] }>) {
      if (chunk.choices[0]?.delta.reasoning_content) sawReasoning = true;
    }
    expect(sawReasoning).toBe(false);
  });

  it("disable_thinking closes the thought block up front, as the template's enable_thinking=false does", async () => {
    const normal = await complete({});
    const disabled = await complete({ service_parameters: { disable_thinking: true }, reasoning_effort: "high" });
    // The template's closed block `<think>\n\n</think>\n\n` joins the prompt.
    expect(disabled.usage.prompt_tokens).toBeGreaterThan(normal.usage.prompt_tokens);
    expect(disabled.choices[0]!.message.reasoning_content).toBeNull();
    expect(disabled.usage.completion_tokens_details.reasoning_tokens).toBe(0);
    expect(disabled.service_parameters.disable_thinking).toBe(true);
    const none = await complete({ reasoning_effort: "none" });
    expect(none.usage.prompt_tokens).toBe(disabled.usage.prompt_tokens);
  });

  it("thinks first, then answers under the JSON grammar or with the forced tool call", async () => {
    const json = await complete({
      reasoning_effort: "low",
      max_tokens: 120,
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "a",
          schema: { type: "object", properties: { ok: { type: "boolean" }, n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["ok", "n"], additionalProperties: false },
        },
      },
    });
    expect(json.choices[0]!.message.reasoning_content!.length).toBeGreaterThan(0);
    expect(Object.keys(JSON.parse(json.choices[0]!.message.content!))).toEqual(["ok", "n"]);
    const call = (await complete({
      reasoning_effort: "low",
      max_tokens: 200,
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { q: { enum: ["sky", "sea"] } }, required: ["q"] } } }],
      tool_choice: "required",
    })) as Completion & { choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[] };
    expect(call.choices[0]!.finish_reason).toBe("tool_calls");
    expect(call.choices[0]!.message.reasoning_content!.length).toBeGreaterThan(0);
    expect(JSON.parse(call.choices[0]!.message.tool_calls[0]!.function.arguments).q).toMatch(/^(sky|sea)$/);
    // Without asking to think, a schema-held answer switches thinking off up front.
    const plain = await complete({ max_tokens: 60, response_format: { type: "json_object" } });
    expect(plain.choices[0]!.message.reasoning_content).toBeNull();
  });

  it("takes the settings from a model feature suffix", async () => {
    const completion = await complete({ model: "tiny-reasoning:strip_thinking_response=true", reasoning_effort: "low" });
    expect(completion.model).toBe("tiny-reasoning");
    expect(completion.service_parameters.strip_thinking_response).toBe(true);
    expect(completion.choices[0]!.message.reasoning_content).toBeNull();
    expect(completion.usage.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it("accepts reasoning_content, reasoning_details and thought_signature passed back in the conversation", async () => {
    const completion = await complete({
      max_tokens: 4,
      messages: [
        ...ask,
        {
          role: "assistant",
          content: "Rayleigh scattering.",
          reasoning_content: "Light scatters.",
          reasoning_details: [{ type: "reasoning.text", text: "Light scatters.", format: "unknown", index: 0 }],
          thought_signature: "opaque-signature",
        },
        { role: "user", content: "And at sunset?" },
      ],
    });
    expect(completion.usage.completion_tokens).toBe(4);
  });

  it("GET /models advertises reasoning and the effort options from the template", async () => {
    const record = (await (await fetch(`${server.baseUrl}/models/tiny-reasoning`)).json()) as { model_spec: { capabilities: Record<string, unknown> } };
    expect(record.model_spec.capabilities).toMatchObject({
      supportsReasoning: true,
      supportsReasoningEffort: true,
      reasoningEffortOptions: ["none", "minimal", "low", "medium", "high", "xhigh", "max"],
    });
  });
});
