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
      "a string whose lengths contradict",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "string", minLength: 5, maxLength: 2 } } },
      ["response_format", "json_schema", "schema"],
      /maxLength is below minLength/,
    ],
    [
      "a schema that is not one",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { type: "wat" } } } } },
      ["response_format", "json_schema", "schema"],
      /unknown type/,
    ],
    [
      "the reference form with a bound that is no number",
      { type: "json_schema", json_schema: { type: "number", maximum: "3" } },
      ["response_format", "json_schema"],
      /must be a number/,
    ],
    [
      "a pattern the check after generation cannot compile",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "(" } } },
      ["response_format", "json_schema", "schema"],
      /cannot be checked/,
    ],
    [
      "a pattern whose backtracking can grow without bound",
      { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { type: "string", pattern: "^(\\w+\\s?)+$" } } } } },
      ["response_format", "json_schema", "schema"],
      /properties\.a\.pattern repeats a group/,
    ],
    [
      "definitions that refer to each other before any value is written",
      {
        type: "json_schema",
        json_schema: { name: "x", schema: { $defs: { a: { $ref: "#/$defs/b" }, b: { anyOf: [{ $ref: "#/$defs/a" }, { type: "null" }] } }, $ref: "#/$defs/a" } },
      },
      ["response_format", "json_schema", "schema"],
      /\(at \$defs\.a\): this definition refers back to itself/,
    ],
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

describe("keywords the grammar cannot hold: enforced where it can, checked after generation", () => {
  const withSchema = (schema: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    post(server, "/chat/completions", {
      model: "tiny-chat",
      messages: ask,
      max_tokens: 60,
      temperature: 0,
      response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema } },
      ...extra,
    });

  it("an output the grammar kept to an enum passes a pattern it matches and fails one it cannot match", async () => {
    const matching = await withSchema({ type: "string", enum: ["abc", "xyz"], pattern: "^[a-z]+$" });
    expect(matching.status).toBe(200);
    expect(matching.headers.get("x-service-schema-unenforced")).toBe("pattern");
    expect(matching.headers.get("x-service-schema-valid")).toBe("true");
    expect(["abc", "xyz"]).toContain(JSON.parse(((await matching.json()) as any).choices[0].message.content));

    const failing = await withSchema({ type: "string", enum: ["abc", "xyz"], pattern: "^[0-9]+$" });
    expect(failing.status).toBe(200);
    expect(failing.headers.get("x-service-schema-unenforced")).toBe("pattern");
    expect(failing.headers.get("x-service-schema-valid")).toBe("false");
  });

  it("gives one verdict per choice, in index order", async () => {
    const res = await withSchema({ type: "string", enum: ["abc", "xyz"], minLength: 3, pattern: "^[a-z]{3}$" }, { n: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBe("pattern");
    expect(res.headers.get("x-service-schema-valid")).toBe("true,true");
  });

  it("checks format, pattern and number bounds on an object the grammar shaped; the verdict matches an independent check", async () => {
    const schema = {
      type: "object",
      properties: {
        code: { type: "string", pattern: "^[A-Z]{3}$", maxLength: 3 },
        email: { type: "string", format: "email", maxLength: 12 },
        score: { type: "number", minimum: 1, maximum: 10 },
        count: { type: "integer", minimum: 3, maximum: 5000 },
      },
      required: ["code", "email", "score", "count"],
      additionalProperties: false,
    };
    const res = await withSchema(schema, { max_tokens: 120 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBe("format,maximum,minimum,pattern");
    const body = (await res.json()) as any;
    expect(body.choices[0].finish_reason).toBe("stop");
    const value = JSON.parse(body.choices[0].message.content);
    // What the grammar held: the shape, the lengths, a non-negative score and a count of at most four digits from 1.
    expect(Object.keys(value).sort()).toEqual(["code", "count", "email", "score"]);
    expect(value.code.length).toBeLessThanOrEqual(3);
    expect(value.score).toBeGreaterThanOrEqual(0);
    expect(Number.isInteger(value.count) && value.count >= 1 && value.count <= 9999).toBe(true);
    const exact = z.object({ code: z.string().regex(/^[A-Z]{3}$/), email: z.email(), score: z.number().min(1).max(10), count: z.number().int().min(3).max(5000) });
    expect(res.headers.get("x-service-schema-valid")).toBe(String(exact.safeParse(value).success));
  });

  it("counts past what a grammar holds are loosened and checked after, not a 500 (llama.cpp refuses a repetition over 2,000)", async () => {
    const res = await withSchema({ type: "array", items: { type: "integer", minimum: 0, maximum: 9 }, minItems: 1_000_000_000 }, { max_tokens: 12 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBe("minItems");
    expect(res.headers.get("x-service-schema-valid")).toBe("false");
    // Loosened to the nearest count it holds: the grammar still asks for items, so the model writes them until max_tokens.
    const body = (await res.json()) as any;
    expect(body.choices[0].finish_reason).toBe("length");
    expect(body.choices[0].message.content).toMatch(/^\[\d(,\d)+$/);
  });

  it("a choice cut short by max_tokens is not valid", async () => {
    const res = await withSchema({ type: "object", properties: { code: { type: "string", pattern: "^a" } }, required: ["code"] }, { max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).choices[0].finish_reason).toBe("length");
    expect(res.headers.get("x-service-schema-valid")).toBe("false");
  });

  it("a schema the grammar holds whole gets neither header", async () => {
    const res = await withSchema({ type: "string", enum: ["abc", "xyz"] });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBeNull();
    expect(res.headers.get("x-service-schema-valid")).toBeNull();
  });

  it("streaming names the unenforced keywords only: the verdict would come after the headers", async () => {
    const res = await withSchema({ type: "string", enum: ["abc", "xyz"], pattern: "^[a-z]+$" }, { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBe("pattern");
    expect(res.headers.get("x-service-schema-valid")).toBeNull();
    expect(await res.text()).toContain("[DONE]");
  });

  it("/responses with a text.format schema says the same", async () => {
    const res = await post(server, "/responses", {
      model: "tiny-chat",
      input: "Give me the forecast as JSON",
      max_output_tokens: 60,
      temperature: 0,
      text: { format: { type: "json_schema", name: "x", schema: { type: "string", enum: ["abc", "xyz"], pattern: "^[0-9]+$" } } },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-schema-unenforced")).toBe("pattern");
    expect(res.headers.get("x-service-schema-valid")).toBe("false");
  });
});
