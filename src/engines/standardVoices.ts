/**
 * The standard's built-in voice names (what the official SDKs offer for /audio/speech) with the
 * character each has, so a backend can map them onto voices of its own.
 */
export const STANDARD_VOICES = Object.freeze({
  alloy: "female",
  ash: "male",
  ballad: "male",
  coral: "female",
  echo: "male",
  fable: "male",
  nova: "female",
  onyx: "male",
  sage: "female",
  shimmer: "female",
  verse: "male",
  marin: "female",
  cedar: "male",
} as const satisfies Record<string, "female" | "male">);

export type StandardVoice = keyof typeof STANDARD_VOICES;
export const STANDARD_VOICE_NAMES = Object.keys(STANDARD_VOICES) as StandardVoice[];

/** Every standard voice to one voice: for single-speaker models. */
export function everyStandardVoiceTo(voice: string | undefined): Record<string, string> {
  return voice ? Object.fromEntries(STANDARD_VOICE_NAMES.map((name) => [name, voice])) : {};
}
