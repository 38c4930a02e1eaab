import type OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { providerSchemaValidator } from "../helpers/providerSchema.js";
import { post, startTestServer, tinyChatEntry, tinyReasoningEntry, type TestServer } from "../helpers/testServer.js";

/**
 * POST /responses through the official openai client, on the tiny demo models (random weights:
 * the text is gibberish, so tools and formats are forced and the tests look at shapes).
 */

/**
 * The provider's ResponsesResponse, widened where the node follows the standard the clients
 * read: the standard's `error: null` on a response that did not fail (the provider types it as
 * an object only), and its `incomplete` status of a response and a message the token limit cut
 * (missing from the provider's enums).
 */
const checkResponse = providerSchemaValidator("ResponsesResponse", (schema) => {
  schema.properties.error = { anyOf: [schema.properties.error, { type: "null" }] };
  schema.properties.status.enum.push("incomplete");
  // The standard's message item status when the token limit cut it.
  const message = schema.properties.output.items.anyOf.find((branch: { title?: string }) => branch.title === "Message Output");
  message.properties.status.enum.push("incomplete");
});
function expectProviderShape(body: unknown): void {
  expect(checkResponse(body)).toBeNull();
}

let server: TestServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry(), tinyReasoningEntry(), tinyChatEntry({ id: "tiny-short", llama: { contextSize: 256, sequences: 1, threads: 1 } })] });
  client = server.openai();
});
afterAll(() => server?.stop());

const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  // Short values only: the tiny model writes until the grammar closes the object.
  parameters: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Rome"] } }, required: ["city"], additionalProperties: false },
  strict: true,
};

describe("POST /responses: text", () => {
  it("answers a string input with a message item, output_text, usage and cost, in the provider's shape", async () => {
    const response = await client.responses.create({ model: "tiny-chat", input: "Hello there", max_output_tokens: 8, temperature: 0, metadata: { run: "1" } });
    expectProviderShape(response);
    expect(response.id).toMatch(/^resp_/);
    expect(response.object).toBe("response");
    expect(response.model).toBe("tiny-chat");
    expect(["completed", "incomplete"]).toContain(response.status);
    const message = response.output.find((item) => item.type === "message")!;
    expect(message).toMatchObject({ type: "message", role: "assistant", id: expect.stringMatching(/^msg_/) });
    const part = message.type === "message" ? message.content[0]! : undefined;
    expect(part).toMatchObject({ type: "output_text", annotations: [] });
    expect(response.output_text).toBe(part && "text" in part ? part.text : undefined);
    expect(response.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), input_tokens_details: { cached_tokens: expect.any(Number) } });
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBe(0);
    expect(response).toMatchObject({ error: null, metadata: { run: "1" }, store: true, max_output_tokens: 8, temperature: 0, previous_response_id: null, tool_choice: "auto" });
    expect((response as unknown as { cost: { usd: number } }).cost.usd).toBeGreaterThanOrEqual(0);
  });

  it("gives `incomplete` with reason max_output_tokens when the limit cuts the answer", async () => {
    const response = await client.responses.create({ model: "tiny-chat", input: "Tell me a long story", max_output_tokens: 2, temperature: 0 });
    expectProviderShape(response);
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(response.usage!.output_tokens).toBe(2);
  });

  it("reports logprobs on output_text when include asks", async () => {
    const response = await client.responses.create({
      model: "tiny-chat",
      input: [
        { role: "developer", content: "Be brief." },
        { role: "user", content: [{ type: "input_text", text: "Hi" }] },
      ],
      max_output_tokens: 3,
      temperature: 0,
      include: ["message.output_text.logprobs"],
      top_logprobs: 2,
    });
    const message = response.output.find((item) => item.type === "message");
    const part = message?.type === "message" ? message.content[0] : undefined;
    const logprobs = part && "logprobs" in part ? part.logprobs! : [];
    expect(logprobs.length).toBe(3);
    expect(logprobs[0]!.top_logprobs).toHaveLength(2);
  });
});

describe("POST /responses: files", () => {
  it("reads an input_file part as chat reads a file part, and refuses file_url naming it", async () => {
    const notes = `data:text/plain;base64,${Buffer.from("The meeting moved to Thursday at noon. ".repeat(20)).toString("base64")}`;
    const plain = await client.responses.create({ model: "tiny-chat", input: "Summarize.", max_output_tokens: 1 });
    const withFile = await client.responses.create({
      model: "tiny-chat",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Summarize." },
            { type: "input_file", filename: "notes.txt", file_data: notes },
          ],
        },
      ],
      max_output_tokens: 1,
    });
    expect(withFile.usage!.input_tokens).toBeGreaterThan(plain.usage!.input_tokens + 100);
    const byUrl = await post(server, "/responses", {
      model: "tiny-chat",
      input: [{ role: "user", content: [{ type: "input_file", file_url: "https://example.com/notes.txt" }] }],
      max_output_tokens: 1,
    });
    expect(byUrl.status).toBe(400);
    expect(JSON.stringify(await byUrl.json())).toContain("file_url");
  });
});

describe("POST /responses: stream", () => {
  it("sends the standard's events in order, sequence numbers increasing, the terminal event last", async () => {
    const stream = client.responses.stream({ model: "tiny-chat", input: "Hello", max_output_tokens: 6, temperature: 0 });
    const events: { type: string; sequence_number: number }[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types).toContain("response.output_text.delta");
    const tail = ["response.output_text.done", "response.content_part.done", "response.output_item.done"];
    expect(types.slice(-4, -1)).toEqual(tail);
    expect(["response.completed", "response.incomplete"]).toContain(types.at(-1));
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const terminal = events.at(-1) as unknown as { response: OpenAI.Responses.Response };
    expectProviderShape(terminal.response);
    expect(final.output_text).toBe(terminal.response.output_text);
    const deltas = events.filter((e) => e.type === "response.output_text.delta").map((e) => (e as unknown as { delta: string }).delta);
    expect(deltas.join("")).toBe(terminal.response.output_text);
  });

  it("names each event on its `event:` line and ends without [DONE]", async () => {
    const res = await post(server, "/responses", { model: "tiny-chat", input: "Hi", max_output_tokens: 2, stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    const blocks = text.trim().split("\n\n");
    for (const block of blocks) {
      const [eventLine, dataLine] = block.split("\n");
      expect(eventLine!.slice("event: ".length)).toBe(JSON.parse(dataLine!.slice("data: ".length)).type);
    }
    expect(text).not.toContain("[DONE]");
  });
});

describe("POST /responses: tools and continuation", () => {
  it("forces a named function call, then answers its output through previous_response_id on the cached prefix", async () => {
    const first = await client.responses.create({
      model: "tiny-chat",
      input: "What is the weather in Paris?",
      tools: [weatherTool],
      tool_choice: { type: "function", name: "get_weather" },
      max_output_tokens: 200,
      temperature: 0,
    });
    expectProviderShape(first);
    const call = first.output.find((item) => item.type === "function_call")!;
    expect(call).toMatchObject({ type: "function_call", name: "get_weather", status: "completed", id: expect.stringMatching(/^fc_/) });
    if (call.type !== "function_call") throw new Error("no call");
    expect(JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });
    expect(first.tool_choice).toEqual({ type: "function", name: "get_weather" });

    const second = await client.responses.create({
      model: "tiny-chat",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ temperature: 21 }) }],
      tools: [weatherTool],
      max_output_tokens: 4,
      temperature: 0,
    });
    expectProviderShape(second);
    expect(second.previous_response_id).toBe(first.id);
    // The first turn's prompt and answer are the start of this one's, and the engine reused them.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens);
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(first.usage!.input_tokens / 2);
  });

  it("streams a function call's arguments", async () => {
    const stream = client.responses.stream({ model: "tiny-chat", input: "Weather in Rome?", tools: [weatherTool], tool_choice: "required", max_output_tokens: 200 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    expect(types).toContain("response.function_call_arguments.delta");
    expect(types.indexOf("response.function_call_arguments.done")).toBeLessThan(types.lastIndexOf("response.output_item.done"));
    const call = final.output.find((item) => item.type === "function_call");
    expect(call && call.type === "function_call" && JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });
  });
});

describe("POST /responses: structured output and reasoning", () => {
  const Weather = z.object({ city: z.enum(["Paris", "Rome"]), celsius: z.number().int().min(-40).max(50) });

  it("enforces text.format json_schema, and responses.parse reads it with a zod schema", async () => {
    const raw = await client.responses.create({
      model: "tiny-chat",
      input: "Weather?",
      text: { format: { type: "json_schema", name: "weather", schema: z.toJSONSchema(Weather) as Record<string, unknown>, strict: true } },
      max_output_tokens: 200,
      temperature: 0,
    });
    expect(Weather.safeParse(JSON.parse(raw.output_text)).success).toBe(true);
    const parsed = await client.responses.parse({ model: "tiny-chat", input: "Weather?", text: { format: zodTextFormat(Weather, "weather") }, max_output_tokens: 200 });
    expect(Weather.safeParse(parsed.output_parsed).success).toBe(true);
  });

  it("puts the thought of a reasoning model in a reasoning item before the message", async () => {
    const response = await client.responses.create({ model: "tiny-reasoning", input: "Why is the sky blue?", reasoning: { effort: "low" }, max_output_tokens: 40, temperature: 0 });
    expectProviderShape(response);
    expect(response.output[0]).toMatchObject({
      type: "reasoning",
      id: expect.stringMatching(/^rs_/),
      summary: [],
      content: [{ type: "reasoning_text", text: expect.any(String) }],
    });
    expect(response.output[1]).toMatchObject({ type: "message" });
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    // The stored reasoning item goes back with its turn when the conversation continues.
    const next = await client.responses.create({
      model: "tiny-reasoning",
      previous_response_id: response.id,
      input: "And at night?",
      max_output_tokens: 4,
      reasoning: { effort: "none" },
    });
    expect(next.usage!.input_tokens).toBeGreaterThan(response.usage!.input_tokens);
    expect(next.output.map((item) => item.type)).toEqual(["message"]);

    const stream = client.responses.stream({ model: "tiny-reasoning", input: "Why?", reasoning: { effort: "low", summary: "auto" }, max_output_tokens: 40, temperature: 0 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain("response.reasoning_text.delta");
    expect(types).toContain("response.reasoning_summary_text.delta");
    expect(types.indexOf("response.reasoning_text.done")).toBeLessThan(types.indexOf("response.output_text.delta"));
    const final = await stream.finalResponse();
    expect(final.output[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: expect.any(String) }] });
  });
});

describe("stored responses", () => {
  it("retrieves, lists the input items, deletes, then answers 404", async () => {
    const created = await client.responses.create({
      model: "tiny-chat",
      input: [
        { role: "user", content: "One" },
        { role: "user", content: "Two" },
      ],
      max_output_tokens: 2,
    });
    const retrieved = await client.responses.retrieve(created.id);
    expectProviderShape(retrieved);
    expect(retrieved).toEqual(created);

    const items = await client.responses.inputItems.list(created.id, { order: "asc" });
    expect(items.data.map((item) => item.type === "message" && item.content)).toEqual(["One", "Two"]);
    expect(items.data[0]!.id).toMatch(/^msg_/);
    const page = await client.responses.inputItems.list(created.id, { order: "asc", limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.has_more).toBe(true);
    const rest = await client.responses.inputItems.list(created.id, { order: "asc", after: page.data[0]!.id });
    expect(rest.data.map((item) => item.id)).toEqual([items.data[1]!.id]);

    await client.responses.delete(created.id);
    await expect(client.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.inputItems.list(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(created.id)).rejects.toMatchObject({ status: 404 });

    // The body the standard's clients expect of a delete.
    const other = await client.responses.create({ model: "tiny-chat", input: "Three", max_output_tokens: 1 });
    const deleted = await fetch(`${server.baseUrl}/responses/${other.id}`, { method: "DELETE", headers: { authorization: `Bearer ${server.adminKey}` } });
    expect(await deleted.json()).toEqual({ id: other.id, object: "response", deleted: true });
  });

  it("stores a file sent in a conversation's first turn once, however many turns continue it, and lists it whole", async () => {
    // A text file with a little text, padded with spaces (a few tokens, 300 KB of base64).
    const notes = `data:text/plain;base64,${Buffer.from(`The keeper is Ada.${" ".repeat(225_000)}`).toString("base64")}`;
    const first = await client.responses.create({
      model: "tiny-chat",
      input: [{ role: "user", content: [{ type: "input_file", filename: "notes.txt", file_data: notes }] }],
      max_output_tokens: 1,
    });
    let previous = first.id;
    for (const turn of ["And then?", "And after?", "Finally?"])
      previous = (await client.responses.create({ model: "tiny-chat", input: turn, max_output_tokens: 1, previous_response_id: previous })).id;

    const stored = server.db.prepare("SELECT id, length(context_items) + length(input_items) AS bytes FROM responses WHERE id IN (?, ?)").all(first.id, previous) as {
      bytes: number;
    }[];
    expect(stored).toHaveLength(2);
    for (const row of stored) expect(row.bytes).toBeLessThan(5000);
    expect(server.db.prepare("SELECT COUNT(*) FROM response_blobs WHERE data = ?").pluck().get(notes)).toBe(1);
    const items = await client.responses.inputItems.list(first.id);
    expect(items.data[0]).toMatchObject({ type: "message", content: [{ type: "input_file", filename: "notes.txt", file_data: notes }] });
  });

  it("keeps nothing with store: false", async () => {
    const created = await client.responses.create({ model: "tiny-chat", input: "Hi", max_output_tokens: 2, store: false });
    expect((created as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it("is its account's only: another account's key gets 404, as for an unknown id", async () => {
    const created = await client.responses.create({ model: "tiny-chat", input: "Mine", max_output_tokens: 2 });
    const stranger = server.openai(server.createKey({ usd: 5 }).key);
    await expect(stranger.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.inputItems.list(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.delete(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.create({ model: "tiny-chat", input: "Go on", previous_response_id: created.id, max_output_tokens: 2 })).rejects.toMatchObject({ status: 404 });
    expect((await client.responses.retrieve(created.id)).id).toBe(created.id);
  });
});

describe("bad requests name the field", () => {
  const standard = () => startTestServer({ models: [tinyChatEntry()], config: { errorFormat: "standard" } });
  let strict: TestServer;
  beforeAll(async () => {
    strict = await standard();
  });
  afterAll(() => strict?.stop());

  async function expectParam(body: Record<string, unknown>, status: number, param: string) {
    const res = await post(strict, "/responses", { model: "tiny-chat", max_output_tokens: 2, ...body });
    const json = (await res.json()) as { error: { param: string | null; message: string } };
    expect({ status: res.status, param: json.error.param }, json.error.message).toEqual({ status, param });
  }

  it("an unknown item type, an orphan function_call_output, an unknown previous_response_id, an unknown field", async () => {
    await expectParam({ input: [{ type: "telepathy", content: "hi" }] }, 400, "input.0.type");
    await expectParam({ input: [{ type: "function_call_output", call_id: "call_nowhere", output: "42" }] }, 400, "input.0.call_id");
    await expectParam({ input: "Hi", previous_response_id: "resp_unknown" }, 404, "previous_response_id");
    await expectParam({ input: [{ type: "item_reference", id: "msg_unknown" }] }, 400, "input.0.id");
    await expectParam({ input: "Hi", max_tokens: 5 }, 400, "max_tokens");
    await expectParam({ input: "Hi", tools: [{ type: "web_search" }] }, 400, "tools.0");
    await expectParam({ input: "Hi", tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] }, 400, "tools.0.type");
    await expectParam({ input: "Hi", tools: [weatherTool], tool_choice: { type: "function", name: "nope" } }, 400, "tool_choice.name");
    await expectParam({ input: [{ role: "user", content: [{ type: "input_image", image_url: "data:image/png;base64,AAAA" }] }] }, 400, "input.0.content.0.type");
  });
});

describe("truncation", () => {
  it("auto leaves out the oldest items until the conversation fits the context; disabled answers 400 naming input", async () => {
    const long = "The keeper wrote down the weather every hour of every night. ".repeat(6);
    const input = [
      { role: "developer" as const, content: "Answer briefly." },
      ...Array.from({ length: 6 }, (_, i) => [
        { role: "user" as const, content: `${i}: ${long}` },
        { role: "assistant" as const, content: `Noted ${i}.` },
      ]).flat(),
      { role: "user" as const, content: "What did the keeper write?" },
    ];
    const refused = await client.responses.create({ model: "tiny-short", input, max_output_tokens: 16 }).catch((e: unknown) => e as { status: number; message: string });
    expect((refused as { status: number }).status).toBe(400);
    expect((refused as { message: string }).message).toMatch(/input/);

    const fitted = await client.responses.create({ model: "tiny-short", input, max_output_tokens: 16, truncation: "auto" });
    expect(fitted.status === "completed" || fitted.status === "incomplete").toBe(true);
    expect(fitted.truncation).toBe("auto");
    expect(fitted.usage!.input_tokens + 16).toBeLessThanOrEqual(256);
    // It kept what it could: more than the last message alone.
    const lastOnly = await client.responses.create({ model: "tiny-short", input: [input[0]!, input.at(-1)!], max_output_tokens: 16 });
    expect(fitted.usage!.input_tokens).toBeGreaterThan(lastOnly.usage!.input_tokens);
  });
});
