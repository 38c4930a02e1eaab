import { describe, expect, it } from "vitest";
import { cuttableSpecialTokens, SpecialTokenCuts, type SpecialTokenText } from "../../src/engines/llama/SpecialTokenCuts.js";

const special = (text: string, rstrip = false): SpecialTokenText => ({ text, rstrip });

describe("cuttableSpecialTokens: the special tokens every occurrence of which llama.cpp splits at", () => {
  it("keeps delimited tokens, angled or bracketed, that nothing else overlaps", () => {
    // Qwen2.5's vocabulary, in part: control tokens, and the user-defined padding the GGUF converter adds.
    const qwen = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "[PAD151700]", "[PAD151701]"].map((text) => special(text));
    expect(cuttableSpecialTokens(qwen)).toEqual(qwen.map((token) => token.text));
  });

  it("leaves out a token another special token holds, starts or ends in (a cut there could split the other)", () => {
    // Falcon's `>>TITLE<<` ends with `<`, the start of `<|endoftext|>`: in `>>TITLE<<|endoftext|>` one of them is not split at.
    expect(cuttableSpecialTokens(["<|endoftext|>", ">>TITLE<<"].map((text) => special(text)))).toEqual([]);
    // A special token that holds a delimited one, or ends in its start.
    expect(cuttableSpecialTokens(["<s>", "x<s>", "<a>", "<a>y", "<b>"].map((text) => special(text)))).toEqual(["<b>"]);
    // Runs of spaces (GPT-NeoX's user-defined tokens) overlap nothing delimited.
    expect(cuttableSpecialTokens(["<|padding|>", "  ", "   "].map((text) => special(text)))).toEqual(["<|padding|>"]);
  });

  it("leaves out tokens that strip the whitespace after them, and delimiters inside a name", () => {
    expect(cuttableSpecialTokens([special("<|end|>", true), special("<|user|>")])).toEqual(["<|user|>"]);
    // `<a[b]>` holds a delimiter inside, so it is compared with the others like any undelimited token: it holds `[b]`.
    expect(cuttableSpecialTokens([special("<a[b]>"), special("[b]"), special("[c]")])).toEqual(["[c]"]);
  });
});

describe("SpecialTokenCuts.pieces", () => {
  const cuts = new SpecialTokenCuts(["<|im_end|>", "[PAD7]", "▁<PRE>"]);

  it("cuts right after a marker at or past each piece's length, and nowhere else", () => {
    const text = "ab<|im_end|>cd[PAD7]e▁<PRE>fg<|im_end|>h";
    expect([...cuts.pieces(text, 1)]).toEqual(["ab<|im_end|>", "cd[PAD7]", "e▁<PRE>", "fg<|im_end|>", "h"]);
    // A marker that ends exactly at the piece length counts; shorter pieces wait for the next one.
    expect([...cuts.pieces(text, 12)]).toEqual(["ab<|im_end|>", "cd[PAD7]e▁<PRE>", "fg<|im_end|>", "h"]);
    expect([...cuts.pieces(text, 13)]).toEqual(["ab<|im_end|>cd[PAD7]", "e▁<PRE>fg<|im_end|>", "h"]);
    expect([...cuts.pieces(text, 1000)]).toEqual([text]);
  });

  it("does not cut after a marker's text inside something else, or after a delimited text that is no marker", () => {
    const text = "<x<|im_end|>y>[[PAD7]]<|im_end >[PAD8]";
    // `<|im_end|>` inside `<x…y>` is still the marker (the cut checks the text, not the context); `<|im_end >` and `[PAD8]` are not.
    expect([...cuts.pieces(text, 1)]).toEqual(["<x<|im_end|>", "y>[[PAD7]", "]<|im_end >[PAD8]"]);
  });

  it("reads text full of delimiters and no marker whole, in one piece", () => {
    const hostile = `${"<".repeat(200_000)}${">".repeat(200_000)}${"[a".repeat(100_000)}]`;
    expect([...cuts.pieces(hostile, 2048)]).toEqual([hostile]);
  });

  it("adds markers with `with`, and counts each once", () => {
    const more = cuts.with(["<|im_end|>", "<think>"]);
    expect(more.size).toBe(4);
    expect(more.markers.sort()).toEqual(["<think>", "<|im_end|>", "[PAD7]", "▁<PRE>"].sort());
    expect(cuts.size).toBe(3);
  });
});
