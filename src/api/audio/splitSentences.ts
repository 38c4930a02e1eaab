/**
 * Splits speech input into the pieces synthesised one after another (and streamed one after
 * another): sentences, with sentences longer than `maxCharacters` cut at clause punctuation,
 * then at spaces. Pieces keep their punctuation (it shapes the prosody); whitespace between
 * them is dropped. Joining the pieces with spaces gives back the text's words in order.
 */

const TERMINAL = new Set([".", "!", "?", "…", "。", "！", "？"]);
const CLOSERS = new Set(['"', "'", "”", "’", ")", "]", "»"]);
/** Words whose trailing period does not end a sentence. */
const ABBREVIATIONS = new Set(["mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "jr", "sr", "prof", "inc", "ltd", "no", "fig", "approx"]);

function endsAbbreviation(text: string, dotIndex: number): boolean {
  const before = /([A-Za-z.]+)$/.exec(text.slice(0, dotIndex))?.[1] ?? "";
  if (ABBREVIATIONS.has(before.toLowerCase())) return true;
  // Initials: "J. K. Rowling".
  return /^[A-Z]$/.test(before);
}

export function splitSentences(text: string, maxCharacters: number): string[] {
  const sentences: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\n") {
      sentences.push(text.slice(start, i));
      start = i + 1;
      continue;
    }
    if (!TERMINAL.has(c)) continue;
    let end = i + 1;
    while (end < text.length && (TERMINAL.has(text[end]!) || CLOSERS.has(text[end]!))) end++;
    const atBoundary = end >= text.length || /\s/.test(text[end]!) || "。！？".includes(c);
    if (!atBoundary || (c === "." && end === i + 1 && endsAbbreviation(text, i))) continue;
    sentences.push(text.slice(start, end));
    start = end;
    i = end - 1;
  }
  sentences.push(text.slice(start));
  return sentences
    .map((s) => s.replace(/\s+/g, " ").trim())
    .filter((s) => s.length > 0)
    .flatMap((s) => splitLong(s, maxCharacters));
}

/** Cuts a long sentence at , ; : — (keeping the mark), then at spaces, then anywhere. */
function splitLong(sentence: string, max: number): string[] {
  if (sentence.length <= max) return [sentence];
  const clauses = sentence.split(/(?<=[,;:—])\s+/);
  const pieces: string[] = [];
  let current = "";
  const flush = () => {
    if (current) pieces.push(current);
    current = "";
  };
  for (const clause of clauses) {
    for (const word of clause.length > max ? clause.split(" ") : [clause]) {
      for (let part = word; part.length > 0; part = part.slice(max)) {
        const chunk = part.slice(0, max);
        if (current && current.length + 1 + chunk.length > max) flush();
        current = current ? `${current} ${chunk}` : chunk;
      }
    }
    if (current.length > max / 2) flush();
  }
  flush();
  return pieces;
}

/** Whether a piece has anything to say (letters or digits), not only punctuation. */
export const isSpeakable = (piece: string) => /[\p{L}\p{N}]/u.test(piece);
