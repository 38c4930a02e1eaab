import type { Token, Tokenizer } from "node-llama-cpp";

export interface TokenizationCacheLimits {
  /** Pieces shorter than this are tokenized every time: cheap, and too many to be worth keeping. */
  minChars: number;
  /** The most text kept, in characters; the least recently used pieces go first. */
  maxChars: number;
}

const DEFAULT_LIMITS: TokenizationCacheLimits = { minChars: 256, maxChars: 4_000_000 };

/**
 * A model's tokenizer that remembers the tokens of long pieces of text. A rendered prompt is
 * tokenized piece by piece between its special tokens, one piece per message body, and the long
 * pieces repeat: the system prompt, the tool definitions, the conversation so far. llama.cpp's
 * BPE tokenizer runs on the JavaScript thread, where every stream of the node waits for it:
 * about 1.2 ms of a 155-token prompt's 1.5 ms of planning on the 2-core machine went to it, and a
 * system prompt of several thousand tokens costs tens of milliseconds. Tokenizing is a pure
 * function of the model, the text and the options, so a piece seen before gets its tokens back.
 */
export class TokenizationCache {
  private readonly pieces = new Map<string, { tokens: readonly Token[]; chars: number }>();
  private chars = 0;
  private readonly limits: TokenizationCacheLimits;
  /** Use in place of the model's tokenizer (LlamaText.tokenize takes it). */
  readonly tokenize: Tokenizer;

  constructor(tokenizer: Tokenizer, limits: Partial<TokenizationCacheLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    const tokenize = (text: string, specialTokens?: boolean | "builtin", options?: "trimLeadingSpace"): Token[] => {
      if (specialTokens === "builtin" || text.length < this.limits.minChars || text.length > this.limits.maxChars) {
        return tokenizer(text as never, specialTokens as never, options as never);
      }
      const key = `${specialTokens ? "s" : "t"}${options === "trimLeadingSpace" ? "l" : "-"}${text}`;
      const known = this.pieces.get(key);
      if (known) {
        // Most recently used last, so eviction takes the oldest.
        this.pieces.delete(key);
        this.pieces.set(key, known);
        return known.tokens.slice();
      }
      const tokens = tokenizer(text, specialTokens, options);
      this.keep(key, { tokens: tokens.slice(), chars: text.length });
      return tokens;
    };
    this.tokenize = Object.assign(tokenize, {
      detokenize: tokenizer.detokenize,
      isSpecialToken: tokenizer.isSpecialToken,
      isEogToken: tokenizer.isEogToken,
    }) as Tokenizer;
  }

  private keep(key: string, piece: { tokens: readonly Token[]; chars: number }): void {
    this.pieces.set(key, piece);
    this.chars += piece.chars;
    for (const [oldKey, old] of this.pieces) {
      if (this.chars <= this.limits.maxChars) break;
      this.pieces.delete(oldKey);
      this.chars -= old.chars;
    }
  }

  /** Pieces and characters kept (tests, diagnostics). */
  size(): { pieces: number; chars: number } {
    return { pieces: this.pieces.size, chars: this.chars };
  }
}
