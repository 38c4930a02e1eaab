import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

// llama.overlapOutput: while several sequences generate, a step's text goes to the clients only
// once the next step's decode is under way. The text, its order and its log probabilities must be
// exactly those of the same request served alone, where nothing is held.
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry({ llama: { contextSize: 2048, sequences: 4, threads: 1, gpuLayers: 0, overlapOutput: true } })] });
});
afterAll(() => server.stop());

interface DecodeFigures {
  fullSteps: number;
  overlapOutput: boolean;
  sequencesPerBatch: Record<string, number>;
}

/** Decode calls that carried at least `sequences` sequences. */
const sharedCalls = (figures: DecodeFigures, sequences: number) =>
  Object.entries(figures.sequencesPerBatch).reduce((sum, [count, calls]) => (Number(count) >= sequences ? sum + calls : sum), 0);

async function decodeFigures(): Promise<DecodeFigures> {
  const res = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  const body = (await res.json()) as { data: { id: string; decode: DecodeFigures | null }[] };
  return body.data.find((m) => m.id === "tiny-chat")!.decode!;
}

const request = (prompt: string) => ({
  model: "tiny-chat",
  messages: [{ role: "user" as const, content: prompt }],
  max_tokens: 48,
  temperature: 0,
  logprobs: true,
  top_logprobs: 2,
});

describe("llama.overlapOutput: streams generating together", () => {
  it("stream the same text, in order, with the same log probabilities as each request served alone", async () => {
    const prompts = ["first stream", "second stream", "a third one", "and the fourth"];
    const alone = [];
    for (const prompt of prompts) alone.push(await server.openai().chat.completions.create(request(prompt)));

    const before = await decodeFigures();
    expect(before.overlapOutput).toBe(true);
    const streamed = await Promise.all(
      prompts.map(async (prompt) => {
        const stream = await server.openai().chat.completions.create({ ...request(prompt), stream: true });
        let text = "";
        const tokens: string[] = [];
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? "";
          for (const entry of chunk.choices[0]?.logprobs?.content ?? []) tokens.push(entry.token);
        }
        return { text, tokens };
      }),
    );
    const after = await decodeFigures();

    for (const [i, answer] of alone.entries()) {
      const choice = answer.choices[0]!;
      expect(streamed[i]!.text).toBe(choice.message.content);
      expect(streamed[i]!.tokens).toEqual(choice.logprobs!.content!.map((entry) => entry.token));
    }
    // They did generate together: steps that all four took part in, where output was held.
    expect(after.fullSteps - before.fullSteps).toBeGreaterThan(30);
  });

  it("stream tool calls whole while others generate: the call's start and its arguments, in order", async () => {
    const tools = [
      {
        type: "function" as const,
        function: {
          name: "get_weather",
          description: "Current weather in a city",
          parameters: {
            type: "object",
            properties: { city: { type: "string", maxLength: 10 }, days: { type: "integer", minimum: 1, maximum: 5 } },
            required: ["city", "days"],
            additionalProperties: false,
          },
        },
      },
    ];
    const call = (prompt: string) => ({
      model: "tiny-chat",
      messages: [{ role: "user" as const, content: prompt }],
      tools,
      tool_choice: { type: "function" as const, function: { name: "get_weather" } },
      max_tokens: 200,
      temperature: 0.7,
      seed: 11,
    });
    const prompts = ["weather in Oslo", "weather in Rome", "weather in Lima"];
    const alone = [];
    for (const prompt of prompts) alone.push((await server.openai().chat.completions.create(call(prompt))).choices[0]!.message.tool_calls![0]!);

    const before = await decodeFigures();
    const streamed = await Promise.all([
      ...prompts.map(async (prompt) => {
        const stream = await server.openai().chat.completions.create({ ...call(prompt), stream: true });
        let name = "";
        let args = "";
        let startedBeforeArguments = false;
        for await (const chunk of stream) {
          for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
            if (delta.function?.name) {
              name += delta.function.name;
              startedBeforeArguments = args === "";
            }
            args += delta.function?.arguments ?? "";
          }
        }
        return { name, args, startedBeforeArguments };
      }),
      // Plain text beside them, so the steps are shared even when the calls differ in length.
      server.openai().chat.completions.create({ ...request("plain text beside the calls"), max_tokens: 120 }),
    ]);
    const after = await decodeFigures();

    for (const [i, expected] of alone.entries()) {
      const got = streamed[i] as { name: string; args: string; startedBeforeArguments: boolean };
      expect(got.name).toBe("get_weather");
      expect(got.startedBeforeArguments).toBe(true);
      expect(got.args).toBe((expected as { function: { arguments: string } }).function.arguments);
    }
    // The calls were generated side by side with the plain text, where output is held.
    expect(sharedCalls(after, 3) - sharedCalls(before, 3)).toBeGreaterThan(10);
  });
});
