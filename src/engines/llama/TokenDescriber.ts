import type { LlamaModel, Token } from "node-llama-cpp";
import { byteToUnicode } from "../tokenizers/byteToUnicode.js";

/**
 * A token's text and exact bytes, as logprobs report them. Detokenizing one token alone
 * loses bytes when the token holds part of a UTF-8 character, so the bytes come from the
 * vocabulary itself: byte-level BPE spells bytes through GPT-2's byte-to-unicode table,
 * SentencePiece writes `<0xHH>` byte tokens and `▁` for spaces.
 */
export class TokenDescriber {
  private readonly cache = new Map<Token, { text: string; bytes: number[] }>();
  private readonly vocabulary: readonly string[] | undefined;
  private readonly kind: "bpe" | "spm" | "other";
  private readonly unicodeToByte: Map<string, number>;

  constructor(private readonly model: LlamaModel) {
    const tokenizer = model.fileInfo.metadata.tokenizer?.ggml;
    this.vocabulary = tokenizer?.tokens as readonly string[] | undefined;
    this.kind = tokenizer?.model === "gpt2" ? "bpe" : tokenizer?.model === "llama" ? "spm" : "other";
    this.unicodeToByte = new Map(byteToUnicode().map((ch, byte) => [ch, byte]));
  }

  describe(token: Token): { text: string; bytes: number[] } {
    let entry = this.cache.get(token);
    if (!entry) {
      const text = this.model.detokenize([token], true);
      entry = { text, bytes: this.bytesOf(token, text) };
      if (this.cache.size < 200_000) this.cache.set(token, entry);
    }
    return entry;
  }

  private bytesOf(token: Token, text: string): number[] {
    const piece = this.vocabulary?.[token];
    if (piece !== undefined && !this.model.isSpecialToken(token)) {
      if (this.kind === "bpe") {
        const bytes = [...piece].map((ch) => this.unicodeToByte.get(ch));
        if (bytes.every((b) => b !== undefined)) return bytes as number[];
      } else if (this.kind === "spm") {
        const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
        if (byte) return [parseInt(byte[1]!, 16)];
        return [...Buffer.from(piece.replaceAll("\u2581", " "), "utf8")];
      }
    }
    return [...Buffer.from(text, "utf8")];
  }
}
