import { getLlama, LlamaGrammar, LlamaLogLevel, type Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { type JsonShape, MAX_ENFORCED_COUNT, MAX_ENFORCED_REPETITIONS, toJsonSchemaSubset, UnsupportedJsonSchemaError } from "../../src/engines/jsonSchemaSubset.js";
import { nestsUnboundedQuantifiers } from "../../src/api/chat/schemaCheck.js";
import { DynamicTemperatureSampler } from "../../src/engines/llama/DynamicTemperatureSampler.js";
import { jsonGrammar } from "../../src/engines/llama/jsonGrammar.js";
import { ReasoningSplitter } from "../../src/engines/llama/ReasoningSplitter.js";
import { parseModelSuffix } from "../../src/api/chat/modelSuffix.js";
import { InvalidRequestError } from "../../src/errors.js";

describe("the JSON Schema subset held by grammar", () => {
  it("normalizes types, required and optional properties, enums, refs and nullable", () => {
    const subset = toJsonSchemaSubset({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      title: "ignored annotation",
      properties: {
        name: { type: "string", maxLength: 12, description: "annotation" },
        age: { type: "integer", minimum: 0, maximum: 120 },
        tag: { anyOf: [{ $ref: "#/$defs/tag" }, { type: "null" }] },
        kind: { type: ["string", "null"] },
      },
      required: ["name", "age"],
      additionalProperties: false,
      $defs: { tag: { enum: ["a", "b"] } },
    });
    expect(subset.root).toMatchObject({
      kind: "object",
      open: false,
      properties: [
        { name: "name", required: true, shape: { kind: "string", maxLength: 12 } },
        { name: "age", required: true, shape: { kind: "integer", min: 0, max: 120 } },
        { name: "tag", required: false, shape: { kind: "anyOf" } },
        { name: "kind", required: false, shape: { kind: "anyOf", options: [{ kind: "string" }, { kind: "null" }] } },
      ],
    });
    expect(subset.defs["$defs/tag"]).toEqual({ kind: "literal", values: ["a", "b"] });
  });

  it("accepts the safe-integer bounds schema generators write, and small integer ranges", () => {
    expect(toJsonSchemaSubset({ type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 }).root).toEqual({ kind: "integer", min: null, max: null });
    expect(toJsonSchemaSubset({ type: "integer", exclusiveMinimum: 0 }).root).toEqual({ kind: "integer", min: 1, max: null });
  });

  it.each([
    [{ type: "string", pattern: "^a" }, "pattern"],
    [{ type: "object", properties: { n: { type: "number", maximum: 3.5 } } }, "properties.n.maximum"],
    [{ type: "integer", minimum: 5, maximum: 100000 }, "minimum"],
    [{ allOf: [{ type: "string" }] }, "allOf"],
    [{ type: "object", properties: {}, required: ["x"] }, "required"],
    [{ type: "wat" }, "type"],
    [{ $ref: "https://example.com/schema" }, "$ref"],
  ])("refuses %j naming %s", (schema, where) => {
    try {
      toJsonSchemaSubset(schema);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UnsupportedJsonSchemaError);
      expect((error as UnsupportedJsonSchemaError).path.join(".")).toBe(where);
    }
  });

  it.each([
    [{ type: "string", pattern: "^a" }, { kind: "string", minLength: 0, maxLength: null, format: null }, ["pattern"]],
    [{ type: "string", format: "email", maxLength: 9 }, { kind: "string", minLength: 0, maxLength: 9, format: null }, ["format"]],
    [{ type: "string", format: "date", minLength: 10 }, { kind: "string", minLength: 0, maxLength: null, format: "date" }, ["minLength"]],
    [{ type: "number", minimum: 2, maximum: 3.5 }, { kind: "number", nonNegative: true }, ["maximum", "minimum"]],
    [{ type: "number", minimum: -2 }, { kind: "number", nonNegative: false }, ["minimum"]],
    [{ type: "integer", minimum: 5, maximum: 100000 }, { kind: "integer", min: 1, max: 999999 }, ["maximum", "minimum"]],
    [{ type: "integer", minimum: -5, maximum: 5000 }, { kind: "integer", min: null, max: 9999 }, ["maximum", "minimum"]],
    [{ type: "integer", exclusiveMinimum: 4, maximum: 5000 }, { kind: "integer", min: 1, max: 9999 }, ["exclusiveMinimum", "maximum"]],
    [{ type: "integer", exclusiveMinimum: 4, maximum: 99 }, { kind: "integer", min: 5, max: 99 }, []],
    [{ allOf: [{ type: "string" }], not: { const: "x" } }, { kind: "any" }, ["allOf", "not"]],
    [{ type: "array", items: { type: "boolean" }, uniqueItems: true }, { kind: "array", prefix: [], items: { kind: "boolean" }, minItems: 0, maxItems: null }, ["uniqueItems"]],
  ])("with `unenforced`, loosens %j to what the grammar holds and names what it left out", (schema, root, names) => {
    const unenforced = new Set<string>();
    expect(toJsonSchemaSubset(schema, { unenforced }).root).toEqual(root);
    expect([...unenforced].sort()).toEqual(names);
  });

  it("loosens lengths and item counts past 2,000 (llama.cpp's limit on a repetition), and refuses them without `unenforced`", () => {
    const unenforced = new Set<string>();
    expect(toJsonSchemaSubset({ type: "array", items: { type: "null" }, minItems: 1e9 }, { unenforced }).root).toMatchObject({ minItems: MAX_ENFORCED_COUNT, maxItems: null });
    expect(toJsonSchemaSubset({ type: "string", minLength: 3, maxLength: 5000 }, { unenforced }).root).toMatchObject({ minLength: 3, maxLength: null });
    expect([...unenforced].sort()).toEqual(["maxLength", "minItems"]);
    expect(() => toJsonSchemaSubset({ type: "object", properties: { a: { type: "string", maxLength: 2001 } } })).toThrow(/properties\.a\.maxLength: maxLength above 2000/);
    expect(toJsonSchemaSubset({ type: "string", maxLength: 2000 }).root).toMatchObject({ maxLength: 2000 });
    // Beside a format the lengths are not enforced at all, whatever they are: that is the reason given.
    expect(() => toJsonSchemaSubset({ type: "string", format: "date", minLength: 5000 })).toThrow(/minLength: format cannot be combined with minLength or maxLength/);
  });

  it("holds a schema's counts together to a budget; identical string ranges count once", () => {
    const strings = (n: number, distinct: boolean) => ({
      type: "object",
      properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string", maxLength: distinct ? 1000 + i : 2000 }])),
    });
    const alike = new Set<string>();
    toJsonSchemaSubset(strings(600, false), { unenforced: alike });
    expect(alike.size).toBe(0);
    const distinct = new Set<string>();
    const { root } = toJsonSchemaSubset(strings(60, true), { unenforced: distinct });
    expect([...distinct]).toEqual(["maxLength"]);
    const bounds = (root as Extract<JsonShape, { kind: "object" }>).properties.map((p) => (p.shape as Extract<JsonShape, { kind: "string" }>).maxLength);
    // 1000 + 1001 + ... until the budget: the first 47 are held, the rest left to the check.
    const held = bounds.filter((b) => b !== null);
    expect(held.reduce((a, b) => a + b!, 0)).toBeLessThanOrEqual(MAX_ENFORCED_REPETITIONS);
    expect(held.length).toBeGreaterThan(40);
    expect(bounds.slice(held.length).every((b) => b === null)).toBe(true);
    expect(() => toJsonSchemaSubset(strings(60, true))).toThrow(/more than 50000 repetitions/);
  });

  it("refuses definitions that come back to themselves before any value is written, and keeps look-alike names apart", () => {
    for (const schema of [
      { $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" },
      { $defs: { a: { $ref: "#/$defs/b" }, b: { anyOf: [{ type: "null" }, { $ref: "#/$defs/a" }] } }, type: "array", items: { $ref: "#/$defs/b" } },
    ]) {
      expect(() => toJsonSchemaSubset(schema, { unenforced: new Set() })).toThrow(/refers back to itself/);
    }
    // Writing something first is fine: a tree of nodes.
    expect(() => toJsonSchemaSubset({ $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } }, $ref: "#/$defs/n" })).not.toThrow();
    const subset = toJsonSchemaSubset({
      $defs: { "a-b": { const: 1 }, "a/b": { const: 2 }, a_b: { const: 3 } },
      type: "array",
      prefixItems: [{ $ref: "#/$defs/a-b" }, { $ref: "#/$defs/a~1b" }, { $ref: "#/$defs/a_b" }],
    });
    const definitions = jsonGrammar(subset)
      .split("\n")
      .filter((line) => line.startsWith("def-"));
    expect(definitions.map((line) => line.split(" ::= ")[1]).sort()).toEqual(['("1")', '("2")', '("3")']);
  });

  it("with `unenforced`, still refuses what is no schema", () => {
    for (const schema of [{ type: "wat" }, { type: "string", minLength: 3, maxLength: 1 }, { type: "integer", minimum: 5, maximum: 4 }, { $ref: "https://example.com/schema" }]) {
      expect(() => toJsonSchemaSubset(schema, { unenforced: new Set() })).toThrow(UnsupportedJsonSchemaError);
    }
  });

  it("tells patterns that repeat an unboundedly repeating group from those that do not", () => {
    for (const pattern of ["(a+)+", "^(\\w+\\s?)+$", "(a*)*b", "((ab)+c)*", "(x{2,})+", "(?:a|b+)*"]) expect(nestsUnboundedQuantifiers(pattern), pattern).toBe(true);
    for (const pattern of ["^[a-z]+$", "(ab)+", "(a+)b+", "(a+){2}", "(a+)?", "[(a+)]+", "\\(a+\\)+", "^\\d{3}-\\d{4}$"]) {
      expect(nestsUnboundedQuantifiers(pattern), pattern).toBe(false);
    }
  });

  it("writes grammars llama.cpp accepts", async () => {
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const schemas = [
      { type: "object", properties: { a: { type: "string" }, b: { type: "number" }, c: { type: "boolean" } }, required: ["a"] },
      { type: "array", prefixItems: [{ type: "integer" }, { const: "x" }], items: { type: "null" }, minItems: 1, maxItems: 4 },
      { type: "array", items: { type: "string", format: "date-time" }, minItems: 2 },
      {
        type: "object",
        properties: { tree: { $ref: "#/$defs/node" } },
        required: ["tree"],
        $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } } },
      },
      { type: "object" },
      { enum: ['quote " and \\ backslash', 3, null, true] },
      // Shapes that once wrote grammars llama.cpp refused ("exceeds sane defaults") or doubled at every level.
      nested(60, (inner) => ({ type: "array", items: inner })),
      nested(60, (inner) => ({ type: "object", properties: { a: inner, b: { type: "string", maxLength: 5 } } })),
      nested(8, (inner) => ({ anyOf: [inner, { type: "array", items: structuredClone(inner) }] })),
      { type: "array", items: { type: "object", properties: { a: { type: "string", maxLength: 3 } } }, minItems: 2000, maxItems: 2000 },
      { type: "array", prefixItems: Array.from({ length: 1999 }, () => ({ type: "integer" })) },
      { type: "array", items: { type: "string", minLength: 1, maxLength: 2000 }, maxItems: 2000 },
      { type: "array", items: { type: "string" }, minItems: 1e9 },
    ];
    for (const schema of schemas) {
      const gbnf = jsonGrammar(toJsonSchemaSubset(schema, { unenforced: new Set() }));
      // A grammar as large as its schema: nesting adds rules, it does not double them.
      expect(gbnf.length).toBeLessThan(100_000);
      expect(() => new LlamaGrammar(llama, { grammar: gbnf }), gbnf).not.toThrow();
    }
  });
});

function nested(levels: number, wrap: (inner: Record<string, unknown>) => Record<string, unknown>): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: "string", maxLength: 5 };
  for (let i = 0; i < levels; i++) schema = wrap(schema);
  return schema;
}

describe("the thought splitter", () => {
  const run = (pieces: string[], startInReasoning = false) => {
    const splitter = new ReasoningSplitter("<think>", "</think>", startInReasoning);
    const out = { content: "", reasoning: "" };
    for (const piece of [...pieces.map((p) => splitter.push(p)), splitter.flush()]) {
      out.content += piece.content;
      out.reasoning += piece.reasoning;
    }
    return out;
  };

  it("splits a thought block from the answer, however the tags are cut", () => {
    expect(run(["<think>\nplan", " it\n</think>\n\nAnswer"])).toEqual({ content: "Answer", reasoning: "plan it" });
    expect(run(["<th", "ink>a", "b</thi", "nk>", "c"])).toEqual({ content: "c", reasoning: "ab" });
  });

  it("handles a block the template opened and text that only looks like a tag", () => {
    expect(run(["thinking", "</think>", "done"], true)).toEqual({ content: "done", reasoning: "thinking" });
    expect(run(["a <b> <thin", "g"])).toEqual({ content: "a <b> <thing", reasoning: "" });
  });
});

describe("dynamic temperature", () => {
  it("runs cool on a sure distribution and hot on a flat one", () => {
    const sampler = new DynamicTemperatureSampler(0.1, 2, 42);
    const sure = new Map([
      [1 as Token, 0.98],
      [2 as Token, 0.01],
      [3 as Token, 0.01],
    ]);
    const flat = new Map([
      [1 as Token, 0.34],
      [2 as Token, 0.33],
      [3 as Token, 0.33],
    ]);
    expect(sampler.sample(sure).temperature).toBeLessThan(0.4);
    expect(sampler.sample(flat).temperature).toBeGreaterThan(1.9);
  });

  it("is reproducible for a seed", () => {
    const dist = new Map([
      [1 as Token, 0.5],
      [2 as Token, 0.3],
      [3 as Token, 0.2],
    ]);
    const pick = (seed: number) =>
      Array.from(
        { length: 20 },
        (
          (s) => () =>
            s.sample(dist).token
        )(new DynamicTemperatureSampler(0.5, 1.5, seed)),
      );
    expect(pick(7)).toEqual(pick(7));
    expect(new Set(pick(7)).size).toBeGreaterThan(1);
  });
});

describe("model feature suffixes", () => {
  it("sets service_parameters from id:parameter=value&...", () => {
    expect(parseModelSuffix("qwen")).toEqual({ modelId: "qwen", parameters: {} });
    expect(parseModelSuffix("qwen:strip_thinking_response=true&enable_web_search=auto&include_venice_system_prompt=false")).toEqual({
      modelId: "qwen",
      parameters: { strip_thinking_response: true, enable_web_search: "auto", include_service_system_prompt: false },
    });
    expect(parseModelSuffix("m:character_slug=pirate%20cat").parameters).toEqual({ character_slug: "pirate cat" });
  });

  it.each([
    ["m:", ["model"]],
    ["m:flag", ["model"]],
    ["m:nope=true", ["model", "nope"]],
    ["m:disable_thinking=maybe", ["model", "disable_thinking"]],
    ["m:enable_web_search=sometimes", ["model", "enable_web_search"]],
  ])("refuses %s with details naming %j", (model, path) => {
    try {
      parseModelSuffix(model);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidRequestError);
      let node = (error as InvalidRequestError).extra.details as Record<string, any>;
      for (const key of path) node = node[key];
      expect(node._errors.length).toBe(1);
    }
  });
});
