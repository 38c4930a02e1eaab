import type { ModelEntry } from "../../config/modelRegistry.js";

/** A single-speaker VITS model offers one voice under this name (unless speech.voices names it otherwise). */
export const VITS_DEFAULT_VOICE = "default";

export const vitsVoices = (entry: ModelEntry): string[] => entry.speech.voices ?? [VITS_DEFAULT_VOICE];
