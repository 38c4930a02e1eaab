import { randomInt } from "node:crypto";
import type { Credits } from "../../billing/credits.js";
import { microsToUnits, totalUsd } from "../../billing/money.js";
import type { Cost } from "../../billing/credits.js";
import { UnpricedDurationError, videoCost } from "../../billing/pricing.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import type { AuthContext } from "../../http/requestContext.js";
import type { JobQueue } from "../../jobs/JobQueue.js";
import { JobFailedError, PaidJobs } from "../../jobs/PaidJobs.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { JobRow } from "../../store/jobs.js";
import type { Db } from "../../store/Store.js";
import { UNSUPPORTED_VIDEO_INPUTS, type QueueVideoRequest, type QuoteVideoRequest, type VideoStatusResponse } from "./schema.js";
import { IMAGE_TO_VIDEO_STRENGTH, type VideoJobInput } from "./videoJob.js";
import type { ServerConfig } from "../../config/serverSettings.js";
import { encodeImage, resizeRgb } from "../../media/image.js";
import { readImageInput } from "../images/imageInput.js";

export const VIDEO_JOB = "video";

export interface VideoPlan {
  entry: ModelEntry;
  seconds: number;
  resolution: string;
  aspectRatio: string;
  width: number;
  height: number;
}

/** A finished job whose generation failed: the error, and whether its charge came back. */
export class VideoFailedError extends JobFailedError {
  constructor(job: JobRow) {
    super(job, "VIDEO_GENERATION_FAILED", "Video generation failed");
  }
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

/**
 * Fields the provider lists that this node's text-to-video models cannot honour: audio (they make
 * silent video), upscaling and the reference-to-video hint. Named in x-service-unsupported-parameters.
 */
export function unsupportedVideoParameters(request: QuoteVideoRequest & { omni_reference_task_type?: string }): string[] {
  const names: string[] = [];
  if (request.audio === true) names.push("audio");
  if (request.upscale_factor !== undefined) names.push("upscale_factor");
  if (request.omni_reference_task_type !== undefined) names.push("omni_reference_task_type");
  return names;
}

/** Quotes, queues and looks up video jobs; the generation itself is the job queue's. */
export class VideoService {
  private readonly paid: PaidJobs;

  constructor(
    private readonly models: ModelManager,
    db: Db,
    credits: Credits,
    jobs: JobQueue,
    private readonly fetching: Pick<ServerConfig, "webScraping" | "maxUploadMb" | "requestTimeoutMs">,
  ) {
    this.paid = new PaidJobs(db, credits, jobs, VIDEO_JOB);
  }

  /** Duration, resolution and aspect ratio checked against the model's lists; frame size derived. */
  plan(request: QuoteVideoRequest): VideoPlan {
    const entry = this.models.get(request.model, "video");
    const video = entry.video;
    if (!video.durations.includes(request.duration)) throw field("duration", `${entry.id} makes videos of ${video.durations.join(", ")}`);
    const resolution = request.resolution ?? video.defaultResolution;
    const height = video.resolutions[resolution];
    if (height === undefined) throw field("resolution", `${entry.id} renders ${Object.keys(video.resolutions).join(", ")}`);
    const aspectRatio = request.aspect_ratio ?? video.defaultAspectRatio;
    if (!video.aspectRatios.includes(aspectRatio)) throw field("aspect_ratio", `${entry.id} supports aspect ratios ${video.aspectRatios.join(", ")}`);
    const [w, h] = aspectRatio.split(":").map(Number) as [number, number];
    const divisor = Math.max(2, entry.image.widthHeightDivisor);
    const width = Math.max(divisor, Math.round((height * w) / h / divisor) * divisor);
    return { entry, seconds: Number.parseInt(request.duration, 10), resolution, aspectRatio, width, height: Math.round(height / divisor) * divisor };
  }

  lines(plan: VideoPlan) {
    try {
      return videoCost(plan.entry, { seconds: plan.seconds, resolution: plan.resolution });
    } catch (error) {
      if (error instanceof UnpricedDurationError) throw field("duration", error.message);
      throw error;
    }
  }

  /** The price in USD, what queueing will charge. */
  quote(request: QuoteVideoRequest): number {
    return microsToUnits(totalUsd(this.lines(this.plan(request))));
  }

  /** Charges the full price and inserts the job (see PaidJobs.queue); an `image_url` is read first and kept at the video's size. */
  async queue(
    request: QueueVideoRequest,
    auth: AuthContext | undefined,
    signal: AbortSignal,
    /** The request's hold on memory for a first frame fetched by URL (RequestContext.holdBytes). */
    holdBytes?: (bytes: number) => void,
  ): Promise<{ plan: VideoPlan; queueId: string; cost: Cost }> {
    for (const name of UNSUPPORTED_VIDEO_INPUTS) {
      if ((request as Record<string, unknown>)[name] !== undefined)
        throw field(name, `${request.model} takes a prompt and at most a first-frame image_url; ${name} is not supported`);
    }
    const plan = this.plan(request);
    const { entry } = plan;
    if (request.prompt.length > entry.image.promptCharacterLimit) throw field("prompt", `${entry.id} takes prompts of at most ${entry.image.promptCharacterLimit} characters`);
    const fps = request.fps ?? entry.video.fps;
    if (fps > entry.video.maxFps) throw field("fps", `${entry.id} renders at most ${entry.video.maxFps} frames per second`);
    const steps = request.steps ?? entry.image.defaultSteps;
    if (steps > entry.image.maxSteps) throw field("steps", `${entry.id} runs at most ${entry.image.maxSteps} steps`);
    const input: VideoJobInput = {
      prompt: request.prompt,
      negativePrompt: request.negative_prompt ?? "",
      seconds: plan.seconds,
      resolution: plan.resolution,
      aspectRatio: plan.aspectRatio,
      width: plan.width,
      height: plan.height,
      fps,
      frames: plan.seconds * fps,
      steps,
      cfgScale: request.cfg_scale ?? entry.image.defaultCfgScale,
      seed: request.seed ?? randomInt(0, 1_000_000_000),
      keyframeInterval: Math.max(1, Math.round(entry.video.keyframeSeconds * fps)),
    };
    if (request.image_url !== undefined) {
      const source = /^https?:\/\//i.test(request.image_url) ? { url: request.image_url } : { base64: request.image_url };
      const picture = await readImageInput(source, this.fetching, signal, holdBytes).catch((error: unknown) => {
        // The picture's own errors name `image`; here the field is image_url.
        if (error instanceof InvalidRequestError) throw field("image_url", error.message.replace(/^image: /, ""));
        throw error;
      });
      const frame = await resizeRgb(picture.rgb, picture.width, picture.height, plan.width, plan.height, "cover");
      input.initImage = (await encodeImage(frame.rgb, frame.width, frame.height, "png")).toString("base64");
      input.initStrength = IMAGE_TO_VIDEO_STRENGTH;
    }
    const { queueId, cost } = this.paid.queue({ model: entry.id, auth, lines: this.lines(plan), input, note: "video job, charged when queued" });
    return { plan, queueId, cost };
  }

  /** The caller's job of that model, not deleted (404 otherwise, without saying which). */
  find(model: string, queueId: string, auth: AuthContext | undefined): JobRow {
    return this.paid.find(model, queueId, auth);
  }

  status(job: JobRow): VideoStatusResponse {
    return this.paid.status(job);
  }

  /** Where the finished video is stored. */
  mediaPath(job: JobRow): string {
    return this.paid.mediaPath(job);
  }

  complete(job: JobRow): void {
    this.paid.complete(job, "video");
  }
}
