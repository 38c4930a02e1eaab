import { describe, expect, it } from "vitest";
import { chunksAtWhitespace } from "../../src/engines/cooperativeWork.js";
import { clipDetails, clipMessage, toErrorResponse, NotFoundError } from "../../src/errors.js";
import { checkJsonShape } from "../../src/http/jsonShape.js";
import { toJsonSchemaSubset } from "../../src/engines/jsonSchemaSubset.js";
import { jsonGrammar } from "../../src/engines/llama/jsonGrammar.js";

/** A value nested `depth` arrays deep, built without recursion. */
function nestedArrays(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("checkJsonShape", () => {
  const limits = { maxDepth: 64, maxNodes: 1000, maxChars: 10_000 };

  it("measures 100,000 levels without overflowing the stack, and names the path where the bound broke", () => {
    const violation = checkJsonShape({ a: nestedArrays(100_000) }, limits);
    expect(violation?.message).toBe("is nested deeper than 64 levels");
    expect(violation?.path).toEqual(["a", ...Array.from({ length: 63 }, () => 0)]);
  });

  it("accepts a value exactly at each bound and refuses one past it", () => {
    expect(checkJsonShape(nestedArrays(64), limits)).toBeUndefined();
    expect(checkJsonShape(nestedArrays(65), limits)?.message).toBe("is nested deeper than 64 levels");
    expect(
      checkJsonShape(
        Array.from({ length: 999 }, () => 1),
        limits,
      ),
    ).toBeUndefined();
    expect(
      checkJsonShape(
        Array.from({ length: 1000 }, () => 1),
        limits,
      )?.message,
    ).toBe("has more than 1000 values");
    expect(checkJsonShape({ k: "x".repeat(9_999) }, limits)).toBeUndefined();
    expect(checkJsonShape({ k: "x".repeat(10_000) }, limits)?.message).toBe("has more than 10000 characters of strings and keys");
    expect(checkJsonShape(null, limits)).toBeUndefined();
  });
});

describe("error messages quote a short prefix", () => {
  it("cuts long runs to 100 characters and the whole to 1,000, keeping short words and the text after", () => {
    expect(clipMessage(`No key ${"k".repeat(5000)} here`)).toBe(`No key ${"k".repeat(100)}… here`);
    expect(clipMessage("a short message stays as it is")).toBe("a short message stays as it is");
    const many = clipMessage("word ".repeat(1000));
    expect(many.length).toBe(1001);
    expect(many.endsWith("…")).toBe(true);
    // A run of megabytes (a 10 MB key in an error's path) is cut the same way.
    expect(clipMessage(`logit_bias.${"1".repeat(10_000_000)}: keys are token ids`)).toBe(`logit_bias.${"1".repeat(89)}… keys are token ids`);
    expect(clipMessage(`a\t\n  ${"b".repeat(101)}\u00a0c`)).toBe(`a\t\n  ${"b".repeat(100)}…\u00a0c`);
  });

  it("clips details without recursion: keys, strings, and at most 200 entries", () => {
    const deep: Record<string, unknown> = {};
    let node = deep;
    for (let i = 0; i < 10_000; i++) node = node[`k${i}`] = { _errors: ["x".repeat(300)] };
    const clipped = JSON.stringify(clipDetails(deep));
    expect(clipped.length).toBeLessThan(200 * 120);
    expect(clipDetails({ ["y".repeat(500)]: { _errors: ["z".repeat(500)] } })).toEqual({ [`${"y".repeat(100)}…`]: { _errors: [`${"z".repeat(100)}…`] } });
  });

  it("applies to every error the API answers", () => {
    const { body } = toErrorResponse(new NotFoundError(`No API key with id ${"i".repeat(1_000_000)} in this account`));
    expect(body.error).toBe(`No API key with id ${"i".repeat(100)}… in this account`);
  });
});

describe("chunksAtWhitespace", () => {
  it("cuts before whitespace in each chunk's second half, hard only where there is none, and loses nothing", () => {
    const text = "alpha beta gamma delta ".repeat(500) + "x".repeat(10_000);
    const chunks = [...chunksAtWhitespace(text, 100)];
    expect(chunks.join("")).toBe(text);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(100);
    // Words are never split where whitespace was available: every chunk of the prose part starts at a space.
    const prose = chunks.slice(1).filter((c) => c.includes(" "));
    for (const chunk of prose) expect(chunk.startsWith(" ")).toBe(true);
  });
});

describe("schema grammars stay small when a schema repeats itself", () => {
  it("a range shared by 300 properties is spelled out once, not 300 times", () => {
    const property = { type: "integer", minimum: 0, maximum: 999 };
    const one = jsonGrammar(toJsonSchemaSubset({ type: "object", properties: { p0: property }, required: ["p0"] }));
    const many = jsonGrammar(toJsonSchemaSubset({ type: "object", properties: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, property])) }));
    expect(one).toContain('"999"');
    expect(many.split('"999"').length - 1).toBe(1);
    // 300 property names and their rules, not 300 copies of 1,000 literals.
    expect(many.length).toBeLessThan(one.length + 300 * 200);
  });
});
