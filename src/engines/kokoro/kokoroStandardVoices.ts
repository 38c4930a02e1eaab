import { STANDARD_VOICE_NAMES, STANDARD_VOICES, type StandardVoice } from "../standardVoices.js";

/**
 * Kokoro v1.0 voices that fit each standard voice, best first: the namesakes Kokoro ships
 * (af_alloy, am_echo, bm_fable, af_nova, am_onyx), then voices of the same gender and character
 * (British for fable and ballad, deep for onyx, bright for shimmer).
 */
const PREFERRED: Readonly<Record<StandardVoice, readonly string[]>> = Object.freeze({
  alloy: ["af_alloy", "af_heart", "af_bella"],
  ash: ["am_michael", "am_adam", "am_eric"],
  ballad: ["bm_george", "bm_lewis", "bm_daniel"],
  coral: ["af_heart", "af_sarah", "af_bella"],
  echo: ["am_echo", "am_adam", "am_michael"],
  fable: ["bm_fable", "bm_george", "bm_lewis"],
  nova: ["af_nova", "af_bella", "af_heart"],
  onyx: ["am_onyx", "am_adam", "am_michael"],
  sage: ["af_sarah", "af_sky", "af_heart"],
  shimmer: ["af_bella", "af_nicole", "af_jessica"],
  verse: ["am_puck", "am_liam", "am_adam"],
  marin: ["af_kore", "af_river", "af_heart"],
  cedar: ["am_fenrir", "am_eric", "am_adam"],
});

/** Language letters in the order a fallback tries them: American, then British English, then the rest. */
const LANGUAGE_ORDER = "abefhijpz";

/**
 * The default standard-voice map for a Kokoro model with these voices: the first preferred voice
 * present, else the first voice of the same gender (second letter f/m, English first), else the
 * model's first voice.
 */
export function kokoroStandardVoices(voices: readonly string[]): Record<string, string> {
  if (voices.length === 0) return {};
  const byLanguage = [...voices].sort((a, b) => rank(a) - rank(b));
  const map: Record<string, string> = {};
  for (const name of STANDARD_VOICE_NAMES) {
    const gender = STANDARD_VOICES[name] === "female" ? "f" : "m";
    map[name] = PREFERRED[name].find((v) => voices.includes(v)) ?? byLanguage.find((v) => v[1] === gender && v[2] === "_") ?? voices[0]!;
  }
  return map;
}

function rank(voice: string): number {
  const index = LANGUAGE_ORDER.indexOf(voice[0] ?? "");
  return index < 0 ? LANGUAGE_ORDER.length : index;
}
