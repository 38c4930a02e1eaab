import { englishToPhonemes, type EnglishDialect } from "./englishG2p.js";

/**
 * Text -> Kokoro phonemes. With the `phonemizer` npm package installed (espeak-ng compiled to
 * WebAssembly, what kokoro-js uses) Hearth phonemizes as kokoro-js does: espeak-ng between
 * punctuation marks, then kokoro-js' corrections. Without it, the built-in English rules of
 * englishG2p.ts. The package is looked up at run time and is not a dependency.
 */

export interface Phonemizer {
  readonly name: "espeak-ng" | "fallback";
  phonemize(text: string, language: KokoroLanguage): Promise<string>;
}

/** Kokoro's language codes: the first letter of a voice name (af_heart: American English). */
export type KokoroLanguage = "a" | "b" | "e" | "f" | "h" | "i" | "j" | "p" | "z";

/** espeak-ng voice per Kokoro language. */
const ESPEAK_VOICES: Record<KokoroLanguage, string> = { a: "en-us", b: "en", e: "es", f: "fr-fr", h: "hi", i: "it", j: "ja", p: "pt-br", z: "cmn" };

export const KOKORO_LANGUAGE_NAMES: Record<KokoroLanguage, string> = {
  a: "American English",
  b: "British English",
  e: "Spanish",
  f: "French",
  h: "Hindi",
  i: "Italian",
  j: "Japanese",
  p: "Brazilian Portuguese",
  z: "Mandarin Chinese",
};

/** Maps a request's language hint (ISO code or English name) to a Kokoro language; undefined when unknown. */
export function languageFromHint(hint: string | undefined): KokoroLanguage | undefined {
  if (!hint) return undefined;
  const h = hint.trim().toLowerCase();
  const table: Record<string, KokoroLanguage> = {
    en: "a",
    "en-us": "a",
    english: "a",
    "american english": "a",
    "en-gb": "b",
    "british english": "b",
    es: "e",
    spanish: "e",
    fr: "f",
    "fr-fr": "f",
    french: "f",
    hi: "h",
    hindi: "h",
    it: "i",
    italian: "i",
    ja: "j",
    japanese: "j",
    pt: "p",
    "pt-br": "p",
    portuguese: "p",
    zh: "z",
    chinese: "z",
    mandarin: "z",
  };
  return table[h];
}

const PUNCTUATION = ';:,.!?¡¿—…"«»“”(){}[]';
const PUNCTUATION_RUN = new RegExp(`(\\s*[${PUNCTUATION.replace(/[\]\\[-]/g, "\\$&")}]+\\s*)+`, "g");

/** kokoro-js' corrections of espeak-ng output (phonemize.js). */
function correctEspeak(phonemes: string, language: KokoroLanguage): string {
  let out = phonemes
    .replace(/kəkˈoːɹoʊ/g, "kˈoʊkəɹoʊ")
    .replace(/kəkˈɔːɹəʊ/g, "kˈəʊkəɹəʊ")
    .replace(/ʲ/g, "j")
    .replace(/r/g, "ɹ")
    .replace(/x/g, "k")
    .replace(/ɬ/g, "l")
    .replace(/(?<=[a-zɹː])(?=hˈʌndɹɪd)/g, " ")
    .replace(/ z(?=[;:,.!?¡¿—…"«»“” ]|$)/g, "z");
  if (language === "a") out = out.replace(/(?<=nˈaɪn)ti(?!ː)/g, "di");
  return out.trim();
}

type EspeakFunction = (text: string, language: string) => Promise<string[]>;

async function importEspeak(): Promise<EspeakFunction | undefined> {
  // A variable specifier keeps TypeScript and bundlers from requiring the optional package.
  const specifier = "phonemizer";
  try {
    const module = (await import(specifier)) as { phonemize?: EspeakFunction; default?: { phonemize?: EspeakFunction } };
    return module.phonemize ?? module.default?.phonemize;
  } catch {
    return undefined;
  }
}

export async function loadPhonemizer(mode: "auto" | "espeak" | "fallback"): Promise<Phonemizer> {
  const espeak = mode === "fallback" ? undefined : await importEspeak();
  if (!espeak) {
    if (mode === "espeak") throw new Error('speech.phonemizer is "espeak" but the `phonemizer` package (espeak-ng) is not installed: npm install phonemizer');
    return {
      name: "fallback",
      // Non-English voices get English letter-to-sound rules here: espeak-ng is needed for them.
      phonemize: async (text, language) => englishToPhonemes(text, (language === "b" ? "en-gb" : "en-us") satisfies EnglishDialect),
    };
  }
  return {
    name: "espeak-ng",
    phonemize: async (text, language) => {
      const pieces: string[] = [];
      let last = 0;
      for (const match of text.matchAll(PUNCTUATION_RUN)) {
        if (match.index > last) pieces.push((await espeak(text.slice(last, match.index), ESPEAK_VOICES[language])).join(" "));
        pieces.push(match[0]);
        last = match.index + match[0].length;
      }
      if (last < text.length) pieces.push((await espeak(text.slice(last), ESPEAK_VOICES[language])).join(" "));
      return correctEspeak(pieces.join(""), language);
    },
  };
}
