import { InvalidRequestError } from "../../errors.js";
import type { ContentPart } from "./schema.js";

/**
 * How each kind of content part becomes text the model reads. Text is itself; the others
 * are refused until this node can read them (file extraction, vision, transcription):
 * each is one entry here, so adding one does not touch the rest of the chat path.
 */
export interface PartContext {
  modelId: string;
  /** Where the part is, for the error's details. */
  path: (string | number)[];
}

export const CONTENT_PART_READERS = Object.freeze({
  text: (part: ContentPart) => (part as { text: string }).text,
  image_url: (_part: ContentPart, ctx: PartContext): string => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.modelId}" does not support images (image_url parts)`);
  },
  input_audio: (_part: ContentPart, ctx: PartContext): string => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.modelId}" does not support audio input (input_audio parts)`);
  },
  video_url: (_part: ContentPart, ctx: PartContext): string => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.modelId}" does not support video input (video_url parts)`);
  },
  file: (_part: ContentPart, ctx: PartContext): string => {
    throw InvalidRequestError.forField([...ctx.path, "type"], `content parts of type "file" are not supported by this node yet`);
  },
} as const satisfies Record<ContentPart["type"], (part: ContentPart, ctx: PartContext) => string>);
