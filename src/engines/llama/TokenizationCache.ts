import type { LlamaModel, Token, Tokenizer } from "node-llama-cpp";
import { modelFileKey } from "./modelFileKey.js";
import { cuttableSpecialTokens, SpecialTokenCuts, type SpecialTokenText } from "./SpecialTokenCuts.js";

export interface TokenizationCacheLimits {
  /** Pieces shorter than this are tokenized every time: cheap, and too many to be worth keeping. */
  minChars: number;
  /** The most text kept, in characters; the least recently used pieces go first. */
  maxChars: number;
}

const DEFAULT_LIMITS: TokenizationCacheLimits = { minChars: 256, maxChars: 4_000_000 };
/** Special tokens of a vocabulary checked in the sample that allows cutting after them. */
const VOCABULARY_SAMPLE_MARKERS = 64;
/** Text longer than this is tokenized in pieces where the model allows it. */
const PIECES_ABOVE_CHARS = 8192;

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

  constructor(
    private readonly tokenizer: Tokenizer,
    limits: Partial<TokenizationCacheLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    const tokenize = (text: string, specialTokens?: boolean | "builtin", options?: "trimLeadingSpace"): Token[] => {
      if (specialTokens === "builtin") return tokenizer(text as never, specialTokens as never, options as never);
      if (text.length < this.limits.minChars || text.length > this.limits.maxChars) return this.fresh(text, specialTokens === true, options);
      const key = `${specialTokens ? "s" : "t"}${options === "trimLeadingSpace" ? "l" : "-"}${text}`;
      const known = this.pieces.get(key);
      if (known) {
        // Most recently used last, so eviction takes the oldest.
        this.pieces.delete(key);
        this.pieces.set(key, known);
        return known.tokens.slice();
      }
      const tokens = this.fresh(text, specialTokens === true, options);
      this.keep(key, { tokens: tokens.slice(), chars: text.length });
      return tokens;
    };
    this.tokenize = Object.assign(tokenize, {
      detokenize: tokenizer.detokenize,
      isSpecialToken: tokenizer.isSpecialToken,
      isEogToken: tokenizer.isEogToken,
    }) as Tokenizer;
  }

  /** Where long text may be cut: with special tokens read, and as plain text (see `allowCuts`). */
  private cuts = { special: new SpecialTokenCuts([]), plain: new SpecialTokenCuts([]) };

  /**
   * Lets long text be tokenized in pieces cut right after the given special tokens (besides
   * those allowed before), if that gives `sample` exactly the tokens it gets whole, cut after
   * every one of them (else nothing changes). `special`: for text read with special tokens (a
   * template's scaffolding, a raw prompt); `plain`: for plain text (a message), where llama.cpp
   * still splits at user-defined tokens (`<think>`, `[PAD151700]`).
   *
   * llama.cpp's split at special tokens is quadratic in their number (see SpecialTokenCuts): the
   * scaffolding a template writes around 20,000 empty messages (580 KB) took 4.7 s of the event
   * loop whole and 78 ms in pieces; a message of 32,768 `[PAD151700]` (user-defined in
   * llama.cpp's Qwen2 vocabulary file), 1.9 s whole. A special token is a cut llama.cpp makes
   * anyway: the text on each side of it is tokenized on its own, so pieces that end with one
   * change nothing.
   */
  allowCuts(mode: "special" | "plain", markers: readonly string[], sample: string): boolean {
    const cuts = this.cuts[mode].with(markers);
    if (cuts.size === this.cuts[mode].size) return false;
    const whole = this.tokenizer(sample, mode === "special");
    const pieces = this.inPieces(cuts, sample, mode === "special", undefined, 1);
    const same = whole.length === pieces.length && whole.every((token, i) => token === pieces[i]);
    if (same) this.cuts[mode] = cuts;
    return same;
  }

  /**
   * Allows cuts after the model's own special tokens, in the given modes: any special token
   * with special tokens read, user-defined ones (`<think>`, the `[PAD151700]` padding some GGUF
   * conversions mark so) in plain text too, which llama.cpp splits at even there. Such text is
   * tokenized in time quadratic in the number of tokens it spells: a raw prompt of 32,000
   * `x<|endoftext|>` took 3.8 s, a message of 32,768 `[PAD151700]` 1.9 s (131,072 of them,
   * 27 s). The cuts are after the vocabulary's delimited special tokens that nothing else
   * overlaps (cuttableSpecialTokens), once a sample with each of them (a spread of them, for
   * vocabularies with thousands) gets the same tokens cut as whole. Reading the attributes of a 256,000-token vocabulary takes up to
   * 50 ms, once per model file; checking the samples, a few milliseconds at each load.
   */
  allowVocabularyCuts(model: LlamaModel, file: string, modes: readonly ("special" | "plain")[]): void {
    const cuttable = vocabularyCuts(model, file);
    for (const mode of modes) {
      const markers = cuttable[mode];
      if (markers.length === 0) continue;
      const spread = markers.filter((_, i) => i % Math.ceil(markers.length / VOCABULARY_SAMPLE_MARKERS) === 0);
      this.allowCuts(mode, markers, spread.map((marker) => `a${marker}b ${marker}\n${marker}${marker} x`).join(""));
    }
  }

  /**
   * A raw prompt (a /completions prompt, read with its special tokens, or a fill-in-the-middle
   * part, read as plain text): in pieces when long, and not kept (it seldom repeats, and would
   * push out the pieces that do).
   */
  tokenizeRaw(text: string, specialTokens: boolean): Token[] {
    return this.fresh(text, specialTokens);
  }

  /** Tokens straight from the model's tokenizer, in pieces when the text is long and may be cut. */
  private fresh(text: string, specialTokens: boolean, options?: "trimLeadingSpace"): Token[] {
    const cuts = this.cuts[specialTokens ? "special" : "plain"];
    if (text.length > PIECES_ABOVE_CHARS && cuts.size > 0) return this.inPieces(cuts, text, specialTokens, options);
    return this.tokenizer(text, specialTokens, options);
  }

  private inPieces(cuts: SpecialTokenCuts, text: string, specialTokens: boolean, options: "trimLeadingSpace" | undefined, pieceChars = PIECES_ABOVE_CHARS / 4): Token[] {
    const tokens: Token[] = [];
    let first = true;
    for (const piece of cuts.pieces(text, pieceChars)) {
      for (const token of this.tokenizer(piece, specialTokens, first ? options : undefined)) tokens.push(token);
      first = false;
    }
    return tokens;
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

  /** The special tokens long text is cut after, by mode (tests, diagnostics). */
  cutMarkers(): { special: string[]; plain: string[] } {
    return { special: this.cuts.special.markers, plain: this.cuts.plain.markers };
  }

  /** Pieces and characters kept (tests, diagnostics). */
  size(): { pieces: number; chars: number } {
    return { pieces: this.pieces.size, chars: this.chars };
  }
}

/** The cuttable special tokens of each model file read so far (see TokenizationCache.allowVocabularyCuts). */
const cutsByFile = new Map<string, { special: string[]; plain: string[] }>();

function vocabularyCuts(model: LlamaModel, file: string): { special: string[]; plain: string[] } {
  const key = modelFileKey(file);
  const known = key === undefined ? undefined : cutsByFile.get(key);
  if (known) return known;
  const size = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  const specials: (SpecialTokenText & { userDefined: boolean })[] = [];
  for (let id = 0; id < size; id++) {
    const attributes = model.getTokenAttributes(id as Token);
    if (!(attributes.control || attributes.userDefined || attributes.unknown)) continue;
    specials.push({ text: model.detokenize([id as Token], true), rstrip: attributes.rstrip, userDefined: attributes.userDefined });
  }
  const cuttable = new Set(cuttableSpecialTokens(specials));
  const cuts = { special: [...cuttable], plain: specials.filter((special) => special.userDefined && cuttable.has(special.text)).map((special) => special.text) };
  if (key !== undefined) cutsByFile.set(key, cuts);
  return cuts;
}
