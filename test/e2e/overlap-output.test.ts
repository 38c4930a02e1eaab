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
}

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
});
