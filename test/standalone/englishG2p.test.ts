import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { englishToPhonemes } from "../../src/engines/kokoro/englishG2p.js";
import { listKokoroVoices, voiceLanguage, KOKORO_V1_VOICES } from "../../src/engines/kokoro/kokoroVoices.js";
import { integerToWords, normalizeEnglishText, ordinalToWords, yearToWords } from "../../src/engines/kokoro/numbersToWords.js";
import { languageFromHint, loadPhonemizer } from "../../src/engines/kokoro/phonemize.js";
import { splitPhonemes } from "../../src/engines/kokoro/KokoroEngine.js";
import { fixturesDir } from "../helpers/testServer.js";

describe("English grapheme-to-phoneme fallback", () => {
  it("reads common sentences in misaki's alphabet, stress before the stressed vowel", () => {
    expect(englishToPhonemes("Hello, world!")).toBe("həlˈO, wˈɜɹld!");
    expect(englishToPhonemes("The quick brown fox jumps over the lazy dog.")).toBe("ðə kwˈɪk bɹˈWn fˈɑks ʤˈʌmps ˈOvəɹ ðə lˈAzi dˈɔɡ.");
    expect(englishToPhonemes("Nation, little, places, hoped, wanted, knight.")).toBe("nˈAʃən, lˈɪɾəl, plˈAsɪz, hˈOpt, wˈæntɪd, nˈIt.");
  });

  it("spells out numbers, money, percentages, ordinals, years and acronyms", () => {
    expect(integerToWords(1_234_567)).toBe("one million two hundred thirty-four thousand five hundred sixty-seven");
    expect(yearToWords(1984)).toBe("nineteen eighty-four");
    expect(yearToWords(2005)).toBe("two thousand five");
    expect(ordinalToWords(21)).toBe("twenty-first");
    expect(ordinalToWords(12)).toBe("twelfth");
    expect(normalizeEnglishText("Dr. Lee paid $12.50 for 3 items, 25% off, on the 3rd.")).toBe(
      "doctor Lee paid twelve dollars and fifty cents for three items, twenty-five percent off, on the third.",
    );
    expect(englishToPhonemes("The API")).toBe("ðə ˌApˌiˈI");
  });

  it("writes British English without r after vowels and with əʊ", () => {
    expect(englishToPhonemes("Hello world, over there.", "en-gb")).toBe("həlˈQ wˈɜːld, ˈQvə ðɛə.");
  });

  it("is deterministic and writes only symbols in Kokoro's vocabulary", () => {
    const vocab = new Set(Object.keys(JSON.parse(readFileSync(join(fixturesDir(), "tiny-kokoro/tokenizer.json"), "utf8")).model.vocab as Record<string, number>));
    const text =
      "It was the best of times, it was the worst of times; it was the age of wisdom — it was the age of foolishness! " +
      "Call me at 555-0123? Quickly: the 42nd streaming synthesis of “phonemes” (and their whereabouts) costs $3.99… " +
      "Thoroughly rhythmic psychology, knowledgeable choirs, judge Xavier's zephyr, queue yachts.";
    for (const dialect of ["en-us", "en-gb"] as const) {
      const phonemes = englishToPhonemes(text, dialect);
      expect(englishToPhonemes(text, dialect)).toBe(phonemes);
      const outside = [...phonemes].filter((c) => !vocab.has(c));
      expect(outside, dialect).toEqual([]);
    }
  });

  it("says nothing for text without letters or digits", () => {
    expect(englishToPhonemes("... !?")).toBe("...!?".replace("...", "…"));
    expect(englishToPhonemes("")).toBe("");
  });

  it("uses the fallback when the phonemizer package is absent, and refuses 'espeak' then", async () => {
    const auto = await loadPhonemizer("auto");
    expect(auto.name).toBe("fallback");
    expect(await auto.phonemize("Hello world", "b")).toBe("həlˈQ wˈɜːld");
    await expect(loadPhonemizer("espeak")).rejects.toThrow(/phonemizer/);
  });

  it("maps voices and language hints to Kokoro languages", () => {
    expect(voiceLanguage("bf_emma")).toBe("b");
    expect(voiceLanguage("jf_alpha")).toBe("j");
    expect(voiceLanguage("vv_123")).toBe("a");
    expect(languageFromHint("en-GB")).toBe("b");
    expect(languageFromHint("English")).toBe("a");
    expect(languageFromHint("klingon")).toBeUndefined();
  });

  it("lists the Kokoro v1.0 voices present, in canonical order", () => {
    expect(KOKORO_V1_VOICES).toHaveLength(54);
    expect(listKokoroVoices(join(fixturesDir(), "tiny-kokoro"))).toEqual(["af_heart", "af_bella", "am_adam", "bf_emma", "bm_george"]);
    expect(listKokoroVoices("/nonexistent")).toEqual([]);
  });

  it("splits long phoneme strings at spaces under the model's token limit", () => {
    const long = Array.from({ length: 200 }, (_, i) => `wˈɜɹd${i}`).join(" ");
    const parts = splitPhonemes(long, 510);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(510);
    expect(parts.join(" ")).toBe(long);
  });
});
