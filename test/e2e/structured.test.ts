import { zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const Weather = z.object({
  city: z.string().max(12),
  days: z.number().int().min(1).max(7),
  unit: z.enum(["c", "f"]),
  windy: z.boolean(),
  note: z.string().max(8).nullable(),
  tags: z.array(z.enum(["sun", "rain", "snow"])).max(3),
});
const ask = [{ role: "user" as const, content: "Give me the forecast as JSON" }];

describe("structured output held by grammar", () => {
  it("json_schema (strict, from the client's zod helper) always parses and validates, on every seed", async () => {
    for (const seed of [1, 2, 3, 4]) {
      const completion = await server.openai().chat.completions.parse({
        model: "tiny-chat",
        messages: ask,
        response_format: zodResponseFormat(Weather, "weather"),
        max_completion_tokens: 150,
        temperature: 1,
        seed,
      });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe("stop");
      // The client parsed it with the zod schema; check the raw text independently too.
      expect(choice.message.parsed).not.toBeNull();
      expect(Weather.parse(JSON.parse(choice.message.content!))).toEqual(choice.message.parsed);
    }
  });

  it("accepts the reference's form, where json_schema is the schema itself", async () => {
    const res = await post(server, "/chat/completions", {
      model: "tiny-chat",
      messages: ask,
      max_tokens: 100,
      seed: 9,
      response_format: {
        type: "json_schema",
        json_schema: { type: "object", properties: { name: { type: "string", maxLength: 6 }, age: { type: "number" } }, required: ["name", "age"] },
      },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string }; finish_reason: string }[] };
    expect(body.choices[0]!.finish_reason).toBe("stop");
    expect(z.strictObject({ name: z.string().max(6), age: z.number() }).parse(JSON.parse(body.choices[0]!.message.content))).toBeTruthy();
  });

  it("streams the JSON token by token; the pieces join to a valid document", async () => {
    const stream = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: ask,
      response_format: zodResponseFormat(Weather, "weather"),
      max_tokens: 150,
      seed: 5,
      stream: true,
    });
    let text = "";
    let pieces = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) {
        text += choice.delta.content;
        pieces++;
      }
      finish ??= choice?.finish_reason ?? null;
    }
    expect(finish).toBe("stop");
    expect(pieces).toBeGreaterThan(10);
    expect(Weather.parse(JSON.parse(text))).toBeTruthy();
  });

  it("json_object gives a JSON object", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, response_format: { type: "json_object" }, max_tokens: 200, seed: 2 });
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    const value = JSON.parse(completion.choices[0]!.message.content!);
    expect(typeof value).toBe("object");
    expect(Array.isArray(value)).toBe(false);
  });

  it("reports finish_reason length honestly when max tokens cut the JSON", async () => {
    const completion = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: ask,
      response_format: zodResponseFormat(Weather, "weather"),
      max_tokens: 4,
    });
    expect(completion.choices[0]!.finish_reason).toBe("length");
    expect(completion.usage!.completion_tokens).toBe(4);
    expect(() => JSON.parse(completion.choices[0]!.message.content!)).toThrow();
  });

  it.each([
    [
      "a keyword that cannot be enforced",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "^[a-z]+$" } } },
      ["response_format", "json_schema", "schema"],
      /pattern/,
    ],
    [
      "a schema that is not one",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { type: "wat" } } } } },
      ["response_format", "json_schema", "schema"],
      /unknown type/,
    ],
    ["the reference form with a bad range", { type: "json_schema", json_schema: { type: "number", maximum: 3 } }, ["response_format", "json_schema"], /upper bound/],
    ["an unknown format type", { type: "xml" }, ["response_format", "type"], /./],
  ])("%s -> 400 naming response_format", async (_name, format, path, message) => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: ask, max_tokens: 5, response_format: format });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { details: Record<string, any> };
    let node = json.details;
    for (const key of path) node = node[key];
    expect(node._errors.join(" ")).toMatch(message);
  });
});
