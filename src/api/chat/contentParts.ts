import { InvalidRequestError } from "../../errors.js";
import type { PartContext } from "./partContext.js";
import { readAudioPart } from "./readAudioPart.js";
import { readFilePart } from "./readFilePart.js";
import type { ContentPart } from "./schema.js";

export type { ContentPartLimits, PartContext } from "./partContext.js";

/**
 * How each kind of content part becomes text the model reads. Text is itself; documents are
 * extracted, audio is transcribed; images and video are refused until a model here can see.
 * Each kind is one entry, so adding one does not touch the rest of the chat path.
 */

type PartOf<T extends ContentPart["type"]> = Extract<ContentPart, { type: T }>;

export const CONTENT_PART_READERS = Object.freeze({
  text: async (part: PartOf<"text">) => part.text,
  file: readFilePart,
  input_audio: readAudioPart,
  image_url: async (_part: ContentPart, ctx: PartContext): Promise<string> => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.entry.id}" does not support images (image_url parts)`);
  },
  video_url: async (_part: ContentPart, ctx: PartContext): Promise<string> => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.entry.id}" does not support video input (video_url parts)`);
  },
} as const satisfies { [T in ContentPart["type"]]: (part: PartOf<T>, ctx: PartContext) => Promise<string> });

export function readContentPart(part: ContentPart, ctx: PartContext): Promise<string> {
  const reader = CONTENT_PART_READERS[part.type] as (part: ContentPart, ctx: PartContext) => Promise<string>;
  return reader(part, ctx);
}
