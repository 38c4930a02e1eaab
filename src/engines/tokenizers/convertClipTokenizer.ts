import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { addedToken } from "./addedToken.js";

/**
 * CLIP's byte-level BPE as the Stable Diffusion exports ship it: `tokenizer/vocab.json` and
 * `tokenizer/merges.txt` (no tokenizer.json). Words are lowercased, split by CLIP's regex and
 * end in `</w>`; the vocabulary is the 256 byte symbols, the same with `</w>`, the merges,
 * then <|startoftext|> and <|endoftext|> as the last two ids.
 */

export const CLIP_START = "<|startoftext|>";
export const CLIP_END = "<|endoftext|>";
/** CLIP's pre-tokenizer pattern (contractions, letter runs, single digits, other symbol runs). */
export const CLIP_SPLIT_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+";
export const END_OF_WORD = "</w>";

/**
 * Builds the `tokenizer.json` (and reads the tokenizer_config.json) that transformers.js needs
 * from a diffusers `tokenizer/` directory holding only vocab.json and merges.txt, the way the
 * `tokenizers` library converts a slow CLIPTokenizer. Nothing is written: pass the result to
 * `new CLIPTokenizer(tokenizerJson, tokenizerConfig)`.
 */
export async function convertClipTokenizer(tokenizerDir: string): Promise<{ tokenizerJson: object; tokenizerConfig: Record<string, unknown> }> {
  const vocab = JSON.parse(await readFile(join(tokenizerDir, "vocab.json"), "utf8")) as Record<string, number>;
  const merges = (await readFile(join(tokenizerDir, "merges.txt"), "utf8")).split("\n").filter((line) => line.length > 0 && !line.startsWith("#version"));
  const tokenizerConfig = JSON.parse(await readFile(join(tokenizerDir, "tokenizer_config.json"), "utf8")) as Record<string, unknown>;
  const id = (token: string) => {
    const value = vocab[token];
    if (value === undefined) throw new Error(`${token} is missing from ${join(tokenizerDir, "vocab.json")}`);
    return value;
  };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [addedToken(id(CLIP_START), CLIP_START), addedToken(id(CLIP_END), CLIP_END)],
    normalizer: {
      type: "Sequence",
      normalizers: [{ type: "NFC" }, { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Lowercase" }],
    },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: CLIP_SPLIT_PATTERN }, behavior: "Removed", invert: true },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: "RobertaProcessing",
      sep: [CLIP_END, id(CLIP_END)],
      cls: [CLIP_START, id(CLIP_START)],
      trim_offsets: false,
      add_prefix_space: false,
    },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: CLIP_END,
      continuing_subword_prefix: "",
      end_of_word_suffix: END_OF_WORD,
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges,
    },
  };
  return { tokenizerJson, tokenizerConfig };
}
