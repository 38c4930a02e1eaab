import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { KokoroLanguage } from "./phonemize.js";

/**
 * The 54 voices of Kokoro-82M v1.0 (hexgrad/Kokoro-82M, onnx-community/Kokoro-82M-v1.0-ONNX
 * voices/*.bin), in the model card's order. The first letter is the language, the second the
 * gender (f/m). A model directory may hold any subset, or voices of its own.
 */
export const KOKORO_V1_VOICES = Object.freeze([
  // American English
  "af_heart",
  "af_alloy",
  "af_aoede",
  "af_bella",
  "af_jessica",
  "af_kore",
  "af_nicole",
  "af_nova",
  "af_river",
  "af_sarah",
  "af_sky",
  "am_adam",
  "am_echo",
  "am_eric",
  "am_fenrir",
  "am_liam",
  "am_michael",
  "am_onyx",
  "am_puck",
  "am_santa",
  // British English
  "bf_alice",
  "bf_emma",
  "bf_isabella",
  "bf_lily",
  "bm_daniel",
  "bm_fable",
  "bm_george",
  "bm_lewis",
  // Japanese
  "jf_alpha",
  "jf_gongitsune",
  "jf_nezumi",
  "jf_tebukuro",
  "jm_kumo",
  // Mandarin Chinese
  "zf_xiaobei",
  "zf_xiaoni",
  "zf_xiaoxiao",
  "zf_xiaoyi",
  "zm_yunjian",
  "zm_yunxi",
  "zm_yunxia",
  "zm_yunyang",
  // Spanish, French, Hindi, Italian, Brazilian Portuguese
  "ef_dora",
  "em_alex",
  "em_santa",
  "ff_siwis",
  "hf_alpha",
  "hf_beta",
  "hm_omega",
  "hm_psi",
  "if_sara",
  "im_nicola",
  "pf_dora",
  "pm_alex",
  "pm_santa",
] as const);

/** Voice files live in the model directory's voices/ folder (the Hugging Face layout). */
export const voicePath = (modelDir: string, voice: string) => join(modelDir, "voices", `${voice}.bin`);

/**
 * The voices whose files exist: the Kokoro v1.0 voices in their canonical order, then any other
 * voice packs in the folder alphabetically. Nothing is loaded.
 */
export function listKokoroVoices(modelDir: string): string[] {
  const dir = join(modelDir, "voices");
  if (!existsSync(dir)) return [];
  const present = new Set(
    readdirSync(dir)
      .filter((f) => f.endsWith(".bin"))
      .map((f) => f.slice(0, -4)),
  );
  const known = KOKORO_V1_VOICES.filter((v) => present.has(v));
  const others = [...present].filter((v) => !(KOKORO_V1_VOICES as readonly string[]).includes(v)).sort();
  return [...known, ...others];
}

/** A voice's language from its name's first letter; American English when unknown. */
export function voiceLanguage(voice: string): KokoroLanguage {
  const letter = voice[0];
  return letter && "abefhijpz".includes(letter) && voice[2] === "_" ? (letter as KokoroLanguage) : "a";
}
