/**
 * Where long special-token text may be cut, so that llama.cpp tokenizes it in pieces.
 *
 * With special tokens on, llama.cpp first splits the text at every occurrence of every special
 * token (longest tokens first), then tokenizes the plain runs between them one by one. The split
 * walks a linked list from its head for every occurrence, so its time grows with the square of the
 * occurrences: 32,000 repetitions of `x<|endoftext|>` (448 KB) held the event loop for 4.1 s. A cut
 * right after an occurrence that the split makes anyway changes no token, and pieces of a few
 * thousand characters keep each split short.
 */

/** A special token of the vocabulary, as `cuttableSpecialTokens` judges it. */
export interface SpecialTokenText {
  text: string;
  /** llama.cpp strips the whitespace after it: a cut after it would keep that whitespace. */
  rstrip: boolean;
}

/** Longer special tokens are not cut after: each cut candidate is looked for within this many characters. */
const MAX_DELIMITED_CHARS = 64;
/** The delimiters of the usual special tokens: `<|im_end|>`, `<start_of_turn>`, `[PAD151700]`, `[INST]`. */
const DELIMITERS = [
  { open: "<", close: ">" },
  { open: "[", close: "]" },
] as const;
const DELIMITER_CHARS = /[<>[\]]/;

/**
 * `<name>` or `[name]`: the name holds no delimiter of either kind. Two such tokens can only
 * overlap by being equal (the one's end would have to be the other's start, and only the ends
 * hold delimiters), and no such token overlaps itself.
 */
function isDelimited(text: string): boolean {
  if (text.length < 3 || text.length > MAX_DELIMITED_CHARS) return false;
  const shape = DELIMITERS.find(({ open, close }) => text.startsWith(open) && text.endsWith(close));
  return shape !== undefined && !DELIMITER_CHARS.test(text.slice(1, -1));
}

/** Whether the two texts can overlap in a text: one holds the other, or the one's end is the other's start. */
function canOverlap(a: string, b: string): boolean {
  if (a.includes(b) || b.includes(a)) return true;
  for (let n = 1; n < Math.min(a.length, b.length); n++) {
    if (a.endsWith(b.slice(0, n)) || b.endsWith(a.slice(0, n))) return true;
  }
  return false;
}

/**
 * The special tokens whose every occurrence in a text is one that llama.cpp's split makes, so a
 * cut right after it is always safe: delimited tokens (`<|im_end|>`, `<unused42>`, `[PAD151700]`)
 * that no other special token overlaps, and that keep the whitespace after them. Delimited tokens
 * cannot overlap each other, so each is compared only with the vocabulary's other special tokens
 * (`▁<PRE>`, `>>TITLE<<`, a run of spaces); those are few.
 */
export function cuttableSpecialTokens(specials: readonly SpecialTokenText[]): string[] {
  const delimited = specials.filter((special) => isDelimited(special.text));
  const others = specials.filter((special) => !isDelimited(special.text) && special.text.length > 0).map((special) => special.text);
  return delimited.filter((special) => !special.rstrip && !others.some((other) => canOverlap(special.text, other))).map((special) => special.text);
}

/**
 * The special tokens a long text may be cut right after, found without searching for each one:
 * delimited ones by looking back from each closing delimiter for its opening one, others (a
 * template's `▁<PRE>`, say) by searching for them.
 */
export class SpecialTokenCuts {
  private readonly delimited: ReadonlySet<string>;
  private readonly others: readonly string[];

  constructor(markers: Iterable<string>) {
    const unique = [...new Set(markers)].filter((marker) => marker.length > 0);
    this.delimited = new Set(unique.filter(isDelimited));
    this.others = unique.filter((marker) => !isDelimited(marker));
  }

  get size(): number {
    return this.delimited.size + this.others.length;
  }

  get markers(): string[] {
    return [...this.delimited, ...this.others];
  }

  /** These cuts and more. */
  with(markers: Iterable<string>): SpecialTokenCuts {
    return new SpecialTokenCuts([...this.markers, ...markers]);
  }

  /**
   * `text` in pieces of at least `pieceChars` characters (the last may be shorter), each but the
   * last ending right after a marker.
   */
  *pieces(text: string, pieceChars: number): Generator<string> {
    // Where each searched marker next occurs (-1: not again), and where the next delimited marker
    // of each shape ends: searched forward only, so the text is read once per marker and shape.
    const next = this.others.map((marker) => text.indexOf(marker));
    const delimitedEnds = DELIMITERS.map(() => (this.delimited.size > 0 ? 0 : text.length));
    let start = 0;
    while (start < text.length) {
      const from = start + pieceChars;
      let end = text.length;
      for (const [i, shape] of DELIMITERS.entries()) {
        if (delimitedEnds[i]! < from) delimitedEnds[i] = this.nextDelimitedEnd(text, shape, start, from);
        end = Math.min(end, delimitedEnds[i]!);
      }
      for (const [i, marker] of this.others.entries()) {
        if (next[i]! >= 0 && next[i]! + marker.length < from) next[i] = text.indexOf(marker, from - marker.length);
        if (next[i]! >= 0) end = Math.min(end, next[i]! + marker.length);
      }
      yield text.slice(start, end);
      start = end;
    }
  }

  /**
   * Where the first marker of this shape that ends at `from` or later (and starts at `start` or
   * later) ends, else the text's length. Each closing delimiter is looked back from at most
   * MAX_DELIMITED_CHARS characters.
   */
  private nextDelimitedEnd(text: string, shape: (typeof DELIMITERS)[number], start: number, from: number): number {
    for (let close = text.indexOf(shape.close, Math.max(start, from - 1)); close >= 0; close = text.indexOf(shape.close, close + 1)) {
      const earliest = Math.max(start, close - MAX_DELIMITED_CHARS + 1);
      for (let open = close - 1; open >= earliest; open--) {
        const char = text[open];
        if (char === shape.close) break; // no marker of this shape holds its closing delimiter inside
        if (char === shape.open) {
          if (this.delimited.has(text.slice(open, close + 1))) return close + 1;
          break;
        }
      }
    }
    return text.length;
  }
}
