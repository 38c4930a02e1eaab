/**
 * Spells out numbers, currency and common abbreviations in English text before
 * grapheme-to-phoneme conversion (the fallback phonemizer reads letters only).
 */

const ONES = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
  "thirteen",
  "fourteen",
  "fifteen",
  "sixteen",
  "seventeen",
  "eighteen",
  "nineteen",
];
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const SCALES: [number, string][] = [
  [1e9, "billion"],
  [1e6, "million"],
  [1e3, "thousand"],
];

function belowHundred(n: number): string {
  if (n < 20) return ONES[n]!;
  const tens = TENS[Math.floor(n / 10)]!;
  return n % 10 ? `${tens}-${ONES[n % 10]}` : tens;
}

function belowThousand(n: number): string {
  if (n < 100) return belowHundred(n);
  const rest = n % 100;
  return `${ONES[Math.floor(n / 100)]} hundred${rest ? ` ${belowHundred(rest)}` : ""}`;
}

/** Integers from 0 to 999,999,999,999 as words ("one hundred twenty-three"); larger ones digit by digit. */
export function integerToWords(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0 || n >= 1e12)
    return String(n)
      .split("")
      .map((d) => ONES[Number(d)] ?? "")
      .join(" ");
  if (n < 1000) return belowThousand(n);
  const parts: string[] = [];
  let rest = n;
  for (const [scale, name] of SCALES) {
    if (rest >= scale) {
      parts.push(`${belowThousand(Math.floor(rest / scale))} ${name}`);
      rest %= scale;
    }
  }
  if (rest) parts.push(belowThousand(rest));
  return parts.join(" ");
}

/** 1984 -> "nineteen eighty-four", 2005 -> "two thousand five", 2024 -> "twenty twenty-four". */
export function yearToWords(n: number): string {
  if (n >= 2000 && n < 2010) return integerToWords(n);
  const high = Math.floor(n / 100);
  const low = n % 100;
  if (low === 0) return `${belowHundred(high)} hundred`;
  return `${belowHundred(high)} ${low < 10 ? `oh ${ONES[low]}` : belowHundred(low)}`;
}

const ORDINAL_IRREGULAR: Record<string, string> = { one: "first", two: "second", three: "third", five: "fifth", eight: "eighth", nine: "ninth", twelve: "twelfth" };

export function ordinalToWords(n: number): string {
  const words = integerToWords(n);
  return words.replace(/([a-z]+)$/, (last) => {
    if (ORDINAL_IRREGULAR[last]) return ORDINAL_IRREGULAR[last];
    if (last.endsWith("y")) return `${last.slice(0, -1)}ieth`;
    return `${last}th`;
  });
}

const ABBREVIATIONS: [RegExp, string][] = [
  [/\bMr\./g, "mister"],
  [/\bMrs\./g, "missus"],
  [/\bMs\./g, "miz"],
  [/\bDr\./g, "doctor"],
  [/\bSt\./g, "saint"],
  [/\bvs\./gi, "versus"],
  [/\betc\./gi, "et cetera"],
  [/\be\.g\./gi, "for example"],
  [/\bi\.e\./gi, "that is"],
];

/** Digits, currency, percentages, ordinals and abbreviations to words. Deterministic. */
export function normalizeEnglishText(text: string): string {
  let out = text.normalize("NFKC").replace(/[‘’`´]/g, "'");
  for (const [pattern, words] of ABBREVIATIONS) out = out.replace(pattern, words);
  out = out
    .replace(/&/g, " and ")
    .replace(/\$(\d[\d,]*)(?:\.(\d\d))?\b/g, (_m, whole: string, cents: string | undefined) => {
      const dollars = Number(whole.replaceAll(",", ""));
      const centsValue = cents ? Number(cents) : 0;
      const dollarWords = `${integerToWords(dollars)} dollar${dollars === 1 ? "" : "s"}`;
      return centsValue ? `${dollarWords} and ${integerToWords(centsValue)} cent${centsValue === 1 ? "" : "s"}` : dollarWords;
    })
    .replace(/(\d+(?:\.\d+)?)\s?%/g, "$1 percent")
    .replace(/\b(\d+)(st|nd|rd|th)\b/gi, (_m, digits: string) => ordinalToWords(Number(digits)))
    .replace(/\b\d{1,3}(?:,\d{3})+\b/g, (m) => m.replaceAll(",", ""))
    .replace(
      /\b(\d+)\.(\d+)\b/g,
      (_m, whole: string, fraction: string) =>
        `${integerToWords(Number(whole))} point ${fraction
          .split("")
          .map((d) => ONES[Number(d)])
          .join(" ")}`,
    )
    .replace(/\b\d+\b/g, (digits) => {
      const n = Number(digits);
      if (digits.length === 4 && ((n >= 1100 && n < 2000) || (n >= 2000 && n < 2100))) return yearToWords(n);
      if (digits.length > 1 && digits.startsWith("0"))
        return digits
          .split("")
          .map((d) => ONES[Number(d)])
          .join(" ");
      return integerToWords(n);
    });
  return out;
}
