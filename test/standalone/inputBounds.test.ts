import { describe, expect, it } from "vitest";
import { chunksAtWhitespace } from "../../src/engines/cooperativeWork.js";
import { clipDetails, clipMessage, toErrorResponse, NotFoundError } from "../../src/errors.js";
import { checkJsonShape, scanJsonText } from "../../src/http/jsonShape.js";
import { templateTokenFloor } from "../../src/api/chat/promptBound.js";
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

describe("checkJsonShape counts as it opens containers", () => {
  it("refuses a million-element array at the limit's index, not after walking it", () => {
    const violation = checkJsonShape({ a: Array.from({ length: 1_000_000 }, () => 1) }, { maxDepth: 8, maxNodes: 1000, maxChars: 1e9 });
    // The root and "a" are two values: the 999th element is the 1,001st.
    expect(violation).toEqual({ path: ["a", 998], message: "has more than 1000 values" });
  });
});

describe("scanJsonText: a large body's bounds read from its text, before parsing", () => {
  const limits = { maxDepth: 3, maxNodes: 5 };
  const scan = (text: string) => scanJsonText(Buffer.from(text), limits);

  it("counts commas and nesting outside strings only", () => {
    expect(scan('{"a":[1,2,3,4]}')).toBeUndefined();
    expect(scan('{"a":[1,2,3,4,5,6]}')).toBe("has more than 5 values");
    expect(scan('{"a":"1,2,3,4,5,6,[[[[[["}')).toBeUndefined();
    expect(scan('{"a":[[[1]]]}')).toBe("is nested deeper than 3 levels");
    expect(scan("[[1],[2],[3]]")).toBeUndefined();
  });

  it("finds the end of a string past escaped quotes and backslashes", () => {
    // An escaped backslash ends the string at the quote after it: what follows is structure.
    expect(scan(String.raw`{"a":"x\\",",,,,,,":1}`)).toBeUndefined();
    expect(scan(String.raw`{"a":"x\\",[[[[1]]]]}`)).toBe("is nested deeper than 3 levels");
    expect(scan(String.raw`{"a":"x\\",1,2,3,4,5,6}`)).toBe("has more than 5 values");
    // An escaped quote does not end it.
    expect(scan(String.raw`{"a":"\",,,,,,,[[[["}`)).toBeUndefined();
    expect(scan(String.raw`{"a":"\\\",,,,,,,"}`)).toBeUndefined();
  });

  it("leaves what is no JSON to the parser", () => {
    expect(scan('{"a":"never closed,,,,,,,,')).toBeUndefined();
    expect(scan("]]]],,,,,")).toBe("has more than 5 values");
  });

  it("agrees with the walk after parsing on whether a body is past the value bound", () => {
    const limitsAfter = { maxDepth: 3, maxNodes: 5, maxChars: 1e9 };
    for (const value of [[1, 2, 3, 4], [1, 2, 3, 4, 5], { a: [1, 2], b: "x,y,z,w,v" }, [[], [], [], [], [], []], { a: 1, b: 2, c: 3, d: 4, e: 5 }]) {
      const walked = checkJsonShape(value, limitsAfter)?.message;
      const scanned = scanJsonText(Buffer.from(JSON.stringify(value)), limits);
      // The scan may let a body through that the walk then refuses (it counts a lower bound), never the reverse.
      if (scanned) expect(walked).toBe(scanned);
    }
    expect(scanJsonText(Buffer.from(JSON.stringify([1, 2, 3, 4, 5, 6])), limits)).toBe(checkJsonShape([1, 2, 3, 4, 5, 6], limitsAfter)?.message);
  });
});

describe("templateTokenFloor: the least a chat template writes around messages", () => {
  const messages = (...list: [string, string][]) => list.map(([role, content]) => ({ role, content }));
  // ChatML's, as the demo model measures it; Qwen's wrapper drops empty messages (all 0).
  const chatml = { empty: { perMessage: 2, perExchange: 14 }, withContent: { perMessage: 2, perExchange: 14 } };
  const qwen = { empty: { perMessage: 0, perExchange: 0 }, withContent: { perMessage: 1, perExchange: 10 } };
  const alternating = (n: number, content: string) => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content }));

  it("counts each two changes between user and assistant as an exchange, every other message at what a merged one costs", () => {
    // 9 changes: 4 exchanges (8 messages) and the first message and the unpaired change.
    expect(templateTokenFloor(alternating(10, "x"), chatml)).toBe(4 * 14 + 2 * 2);
    expect(templateTokenFloor(messages(["user", "x"], ["user", "x"], ["user", "x"]), chatml)).toBe(6);
    // System and tool messages open no exchange.
    expect(templateTokenFloor(messages(["system", "x"], ["user", "x"], ["assistant", "x"], ["user", "x"]), chatml)).toBe(14 + 2 * 2);
  });

  it("costs empty messages apart, and an exchange with an empty side at the lesser cost", () => {
    expect(templateTokenFloor(alternating(1000, "x"), qwen)).toBe(499 * 10 + 2 * 1);
    // Qwen's wrapper drops empty messages: only the floor of one token a message is left.
    expect(templateTokenFloor(alternating(1000, ""), qwen)).toBe(1000);
    const mixed = alternating(1000, "x").map((message, i) => (i % 4 === 1 ? { ...message, content: "" } : message));
    // Every other assistant message empty: half the exchanges have an empty side.
    expect(templateTokenFloor(mixed, qwen)).toBe(249 * 10 + 2 * 1);
    // An assistant message with only tool calls has content.
    expect(
      templateTokenFloor(
        [
          { role: "user", content: "x" },
          { role: "assistant", content: null, tool_calls: [{}] },
          { role: "user", content: "x" },
        ],
        qwen,
      ),
    ).toBe(10 + 1);
  });

  it("counts one token a message where nothing was measured", () => {
    expect(templateTokenFloor(alternating(3, "x"), undefined)).toBe(3);
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
