import { afterEach, describe, expect, it } from "vitest";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

interface Usage {
  prompt_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_creation_input_tokens: number };
}
const topic = (name: string) => `This is a long document about ${name}. `.repeat(25);

async function ask(s: TestServer, content: string, extra: Record<string, unknown> = {}): Promise<Usage> {
  const res = await post(s, "/chat/completions", {
    model: "tiny-chat",
    messages: [{ role: "user", content }],
    max_tokens: 1,
    temperature: 0,
    service_parameters: { include_service_system_prompt: false },
    ...extra,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { usage: Usage }).usage;
}

/** Two sequences, so the third distinct prompt must overwrite one of the two cached ones. */
const twoSequences = () => startTestServer({ models: [tinyChatEntry({ llama: { contextSize: 1024, sequences: 2, threads: 1, gpuLayers: 0 } })] });

describe("prompt caching", () => {
  it("reports the reused prefix as cached_tokens and the rest as cache_creation_input_tokens", async () => {
    server = await twoSequences();
    const first = await ask(server, `${topic("rivers")} Question one?`);
    expect(first.prompt_tokens_details.cached_tokens).toBe(0);
    expect(first.prompt_tokens_details.cache_creation_input_tokens).toBe(first.prompt_tokens);
    const second = await ask(server, `${topic("rivers")} Question two?`);
    expect(second.prompt_tokens_details.cached_tokens).toBeGreaterThan(second.prompt_tokens * 0.8);
    expect(second.prompt_tokens_details.cache_creation_input_tokens).toBe(second.prompt_tokens - second.prompt_tokens_details.cached_tokens);
  });

  it("without a key, a stranger's prompt overwrites the least recently used cache", async () => {
    server = await twoSequences();
    await ask(server, topic("rivers"));
    await ask(server, topic("mountains"));
    await ask(server, topic("deserts")); // overwrites the older of the two: rivers
    const back = await ask(server, `${topic("rivers")} again`);
    // Only the template's opening is shared with whatever the sequences hold now.
    expect(back.prompt_tokens_details.cached_tokens).toBeLessThan(back.prompt_tokens * 0.2);
  });

  it("prompt_cache_key routes a request to the sequence its key used, which strangers leave alone", async () => {
    server = await twoSequences();
    await ask(server, topic("rivers"), { prompt_cache_key: "user-42" });
    await ask(server, topic("mountains"));
    await ask(server, topic("deserts")); // the keyed sequence is kept: this overwrites mountains
    const back = await ask(server, `${topic("rivers")} again`, { prompt_cache_key: "user-42" });
    expect(back.prompt_tokens_details.cached_tokens).toBeGreaterThan(back.prompt_tokens * 0.8);
  });

  it("cache_control breakpoints keep their prefix in preference to unmarked ones", async () => {
    server = await twoSequences();
    const marked = { role: "user", content: [{ type: "text", text: topic("rivers"), cache_control: { type: "ephemeral" } }] };
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [marked], max_tokens: 1, service_parameters: { include_service_system_prompt: false } });
    expect(res.status).toBe(200);
    await ask(server, topic("mountains"));
    await ask(server, topic("deserts")); // overwrites the unpinned mountains, not the marked rivers
    const back = await ask(server, `${topic("rivers")} again`);
    expect(back.prompt_tokens_details.cached_tokens).toBeGreaterThan(back.prompt_tokens * 0.8);
  });

  it("system prompts are cached automatically and kept like a breakpoint", async () => {
    server = await twoSequences();
    const withSystem = (question: string) =>
      post(server!, "/chat/completions", {
        model: "tiny-chat",
        messages: [
          { role: "system", content: topic("policy") },
          { role: "user", content: question },
        ],
        max_tokens: 1,
      });
    const first = ((await (await withSystem("one")).json()) as { usage: Usage }).usage;
    await ask(server, topic("mountains"));
    await ask(server, topic("deserts"));
    const again = ((await (await withSystem("two")).json()) as { usage: Usage }).usage;
    expect(again.prompt_tokens_details.cached_tokens).toBeGreaterThan(first.prompt_tokens * 0.8);
  });
});
