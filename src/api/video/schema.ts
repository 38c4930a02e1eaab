import { z } from "zod";

/** Video wire shapes: the reference's Quote/Queue/Retrieve/CompleteVideoRequest and their responses. */

/** Fields of QueueVideoRequest for inputs a text-to-video model has no use for: refused with a 400 naming them. */
export const UNSUPPORTED_VIDEO_INPUTS = [
  "end_image_url",
  "audio_url",
  "video_url",
  "reference_image_urls",
  "reference_video_urls",
  "reference_audio_urls",
  "reference_document_urls",
  "elements",
  "scene_image_urls",
  "keyframes",
] as const;

export const QuoteVideoRequest = z.looseObject({
  model: z.string().min(1),
  duration: z.string().min(1),
  aspect_ratio: z.string().optional(),
  resolution: z.string().optional(),
  /** Accepted; this node's video models make no audio and do not upscale (x-service-unsupported-parameters names them when asked for). */
  audio: z.boolean().optional(),
  upscale_factor: z.number().int().optional(),
});
export type QuoteVideoRequest = z.infer<typeof QuoteVideoRequest>;

export const QueueVideoRequest = QuoteVideoRequest.extend({
  prompt: z.string().min(1).max(20000),
  /** Image-to-video: the first frame from this picture (a data: URL, base64, or an http(s) URL fetched under --web-scraping on). */
  image_url: z.string().min(1).optional(),
  negative_prompt: z.string().max(20000).optional(),
  /** Hearth extensions: frames per second (up to the model's maxFps), sampler steps, guidance, seed. */
  fps: z.number().int().min(1).max(60).optional(),
  steps: z.number().int().min(1).optional(),
  cfg_scale: z.number().gt(0).max(20).optional(),
  seed: z.number().int().min(-999999999).max(999999999).optional(),
  /** The provider's hint for its reference-to-video models: accepted, not used here. */
  omni_reference_task_type: z.enum(["auto", "reference", "edit", "extend", "editing", "extension"]).optional(),
});
export type QueueVideoRequest = z.infer<typeof QueueVideoRequest>;

export const QueueVideoResponse = z.object({
  model: z.string(),
  queue_id: z.string(),
  // What queueing charged (the whole job, paid up front) is in x-service-cost-usd / x-service-cost-diem: the reference's body is closed.
});
export type QueueVideoResponse = z.infer<typeof QueueVideoResponse>;

export const RetrieveVideoRequest = z.looseObject({
  model: z.string().min(1),
  queue_id: z.string().min(1),
  delete_media_on_completion: z.boolean().default(false),
});
export type RetrieveVideoRequest = z.infer<typeof RetrieveVideoRequest>;

/** While the job runs. `status` keeps the reference's two values; `state` tells queued from running. */
export const VideoStatusResponse = z.object({
  status: z.literal("PROCESSING"),
  average_execution_time: z.number(),
  execution_duration: z.number(),
  state: z.enum(["QUEUED", "RUNNING"]),
  progress: z.number(),
  queue_position: z.number().int().optional(),
});
export type VideoStatusResponse = z.infer<typeof VideoStatusResponse>;

export const CompleteVideoRequest = z.looseObject({ model: z.string().min(1), queue_id: z.string().min(1) });
export type CompleteVideoRequest = z.infer<typeof CompleteVideoRequest>;

export const QuoteVideoResponse = z.object({ quote: z.number() });
export const CompleteVideoResponse = z.object({ success: z.literal(true) });
