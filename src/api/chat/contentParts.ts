import type { UserContentPart } from "../../engines/types.js";
import type { PartContext } from "./partContext.js";
import { readAudioPart } from "./readAudioPart.js";
import { readFilePart } from "./readFilePart.js";
import { readImagePart, readVideoPart } from "./readVisualPart.js";
import type { ContentPart } from "./schema.js";

export type { ContentPartLimits, PartContext } from "./partContext.js";

/**
 * How each kind of content part becomes what the model reads. Text is itself; documents are
 * extracted, audio is transcribed; pictures and video go to models that see (decoded here, or
 * relayed as they are) and are refused, with the reason, by the rest.
 * Each kind is one entry, so adding one does not touch the rest of the chat path.
 */

type PartOf<T extends ContentPart["type"]> = Extract<ContentPart, { type: T }>;

export const CONTENT_PART_READERS = Object.freeze({
  text: async (part: PartOf<"text">) => part.text,
  file: readFilePart,
  input_audio: readAudioPart,
  image_url: readImagePart,
  video_url: readVideoPart,
} as const satisfies { [T in ContentPart["type"]]: (part: PartOf<T>, ctx: PartContext) => Promise<string | UserContentPart | UserContentPart[]> });

export function readContentPart(part: ContentPart, ctx: PartContext): Promise<string | UserContentPart | UserContentPart[]> {
  const reader = CONTENT_PART_READERS[part.type] as (part: ContentPart, ctx: PartContext) => Promise<string | UserContentPart | UserContentPart[]>;
  return reader(part, ctx);
}
