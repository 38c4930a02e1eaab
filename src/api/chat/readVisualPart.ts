import type { UserContentPart } from "../../engines/types.js";
import { InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { FfmpegError, sampleVideoFrames } from "../../media/ffmpeg.js";
import { decodeInputImage, ImageTooLargeError } from "../../media/image.js";
import { withDeadline } from "../../http/withDeadline.js";
import { fetchFile } from "../../search/fetchFile.js";
import { decodeInlineField } from "./inlineData.js";
import type { PartContext } from "./partContext.js";
import type { ContentPart } from "./schema.js";

type ImagePart = Extract<ContentPart, { type: "image_url" }>;
type VideoPart = Extract<ContentPart, { type: "video_url" }>;

/** Longest side of a sampled video frame: frames are shown untiled, so more pixels than a tile's few would be lost anyway. */
const VIDEO_FRAME_SIDE = 384;

/**
 * An image_url part: counted against the model's limit, then passed on unchanged to an upstream
 * that sees, or fetched (http(s), where the operator allows it) or decoded (data URL) and read
 * to pixels for a model here. A model that cannot see answers a 400 with the reason.
 */
export async function readImagePart(part: ImagePart, ctx: PartContext): Promise<UserContentPart> {
  const visual = ctx.visual;
  if (visual.kind === "none" || visual.maxImages === 0) {
    const reason = visual.kind === "none" ? visual.reason : "it takes video but not pictures";
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.entry.id}" does not support images (image_url parts): ${reason}`);
  }
  ctx.counts.images++;
  if (ctx.counts.images > visual.maxImages) {
    throw InvalidRequestError.forField(ctx.path, `this is image ${ctx.counts.images} of the request; the model "${ctx.entry.id}" takes at most ${visual.maxImages}`);
  }
  const source = part as Record<string, unknown>;
  const url = part.image_url?.url;
  if (url === undefined) throw InvalidRequestError.forField([...ctx.path, "image_url", "url"], "required: the picture as a data URL (data:image/png;base64,...) or an http(s) URL");
  if (visual.kind === "relayed") return { type: "image", source };

  const path = [...ctx.path, "image_url", "url"];
  const bytes = await readMedia(url, path, ctx, "picture");
  try {
    const image = await decodeInputImage(bytes, visual.maxImagePixels);
    return { type: "image", source, image: { rgb: image.rgb, width: image.width, height: image.height }, detail: part.image_url?.detail };
  } catch (error) {
    if (error instanceof ImageTooLargeError) {
      throw new PayloadTooLargeError(
        `${path.join(".")}: the picture is ${error.width}×${error.height} pixels; this model takes at most ${visual.maxImagePixels} pixels (vision.maxImagePixels)`,
      );
    }
    throw InvalidRequestError.forField(path, `not a picture this node can decode (PNG, JPEG, WebP or GIF): ${(error as Error).message}`);
  }
}

/** A video_url part: passed on to an upstream that takes video, or sampled to frames with ffmpeg for a model here. */
export async function readVideoPart(part: VideoPart, ctx: PartContext): Promise<UserContentPart> {
  const visual = ctx.visual;
  if (visual.kind === "none" || visual.maxVideos === 0) {
    const reason = visual.kind === "none" ? visual.reason : "it takes pictures (image_url parts) but not video";
    throw InvalidRequestError.forField([...ctx.path, "type"], `the model "${ctx.entry.id}" does not support video input (video_url parts): ${reason}`);
  }
  ctx.counts.videos++;
  if (ctx.counts.videos > visual.maxVideos) {
    throw InvalidRequestError.forField(ctx.path, `this is video ${ctx.counts.videos} of the request; the model "${ctx.entry.id}" takes at most ${visual.maxVideos}`);
  }
  const source = part as Record<string, unknown>;
  const url = part.video_url?.url;
  if (url === undefined) throw InvalidRequestError.forField([...ctx.path, "video_url", "url"], "required: the video as a data URL (data:video/mp4;base64,...) or an http(s) URL");
  if (visual.kind === "relayed") return { type: "video", source };

  const path = [...ctx.path, "video_url", "url"];
  const bytes = await readMedia(url, path, ctx, "video");
  try {
    // Past the request's deadline it is a 504: a video whose header gives no length is decoded once to find it.
    const sampled = await withDeadline(ctx.signal, ctx.limits.requestTimeoutMs, (signal) => sampleVideoFrames(bytes, visual.videoFrames, VIDEO_FRAME_SIDE, signal));
    return { type: "video", source, frames: sampled.frames, frameTimes: sampled.times, duration: sampled.duration };
  } catch (error) {
    ctx.signal?.throwIfAborted();
    if (error instanceof FfmpegError) throw InvalidRequestError.forField(path, `not a video this node can decode: ${error.message}`);
    throw error;
  }
}

/** The bytes behind a part's URL: a data URL decoded, or an http(s) URL fetched where the operator allows it. */
async function readMedia(url: string, path: (string | number)[], ctx: PartContext, what: string): Promise<Buffer> {
  const { maxFileBytes, requestTimeoutMs } = ctx.limits;
  const tooLarge = (bytes: number) => `the ${what} is ${(bytes / 1e6).toFixed(2)} MB; this node accepts at most ${(maxFileBytes / 1e6).toFixed(2)} MB (--max-upload-mb)`;
  if (/^https?:\/\//i.test(url)) {
    if (!ctx.fetchUrls) {
      throw InvalidRequestError.forField(path, `this node does not fetch ${what} URLs (the operator enables it with --web-scraping on): send the ${what} as a data URL`);
    }
    const fetched = await fetchFile(url, { maxBytes: maxFileBytes, timeoutMs: requestTimeoutMs, hold: ctx.holdBytes }, ctx.signal ?? new AbortController().signal);
    if (!fetched.ok) {
      if (fetched.tooLarge) throw new PayloadTooLargeError(`${path.join(".")}: ${fetched.reason}`);
      throw InvalidRequestError.forField(path, `the ${what} could not be fetched: ${fetched.reason}`);
    }
    return fetched.file.data;
  }
  const decoded = await decodeInlineField(url, path, maxFileBytes, tooLarge);
  if (decoded.data.length === 0) throw InvalidRequestError.forField(path, `empty: the ${what} has no content`);
  return decoded.data;
}
