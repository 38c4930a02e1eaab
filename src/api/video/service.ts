import { randomInt, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Credits } from "../../billing/credits.js";
import { microsToUnits, totalUsd } from "../../billing/money.js";
import type { Cost } from "../../billing/credits.js";
import { UnpricedDurationError, videoCost } from "../../billing/pricing.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { ApiError, InvalidRequestError, NotFoundError } from "../../errors.js";
import type { AuthContext } from "../../http/requestContext.js";
import type { JobQueue } from "../../jobs/JobQueue.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { insertJob, jobsAhead, recentExecutionTimes, type JobRow } from "../../store/jobs.js";
import type { Db } from "../../store/Store.js";
import { inTransaction } from "../../store/transaction.js";
import { UNSUPPORTED_VIDEO_INPUTS, type QueueVideoRequest, type QuoteVideoRequest, type VideoStatusResponse } from "./schema.js";
import type { VideoJobInput } from "./videoJob.js";

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
export class VideoFailedError extends ApiError {
  constructor(job: JobRow) {
    super(500, job.error ?? "Video generation failed", { code: "VIDEO_GENERATION_FAILED", body: { status: "FAILED", credits_refunded: job.refundedAt !== null } });
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
  constructor(
    private readonly models: ModelManager,
    private readonly db: Db,
    private readonly credits: Credits,
    private readonly jobs: JobQueue,
  ) {}

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

  /**
   * Charges the full price and inserts the job in one transaction: either both happen or
   * neither does, so a crash cannot leave a paid job missing or a queued job unpaid.
   */
  queue(request: QueueVideoRequest, auth: AuthContext | undefined): { plan: VideoPlan; queueId: string; cost: Cost } {
    for (const name of UNSUPPORTED_VIDEO_INPUTS) {
      if ((request as Record<string, unknown>)[name] !== undefined) throw field(name, `${request.model} is a text-to-video model; ${name} is not supported`);
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
    const lines = this.lines(plan);
    const queueId = randomUUID();
    let cost: Cost = { usd: 0, diem: 0 };
    inTransaction(this.db, () => {
      let charged = { usd: 0, diem: 0 };
      if (auth) {
        const hold = this.credits.reserve({ requestId: queueId, accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines: lines });
        const settled = this.credits.settle(hold, lines, { model: entry.id, note: "video job, charged when queued" });
        const { payments } = settled;
        cost = settled.cost;
        for (const p of payments) charged = p.currency === "DIEM" ? { ...charged, diem: charged.diem + p.micros } : { ...charged, usd: charged.usd + p.micros };
      }
      insertJob(this.db, {
        id: queueId,
        kind: VIDEO_JOB,
        model: entry.id,
        accountId: auth?.accountId ?? null,
        apiKeyId: auth?.apiKeyId ?? null,
        inputJson: JSON.stringify(input),
        chargedUsdMicros: charged.usd,
        chargedDiemMicros: charged.diem,
        createdAt: Date.now(),
      });
    });
    this.jobs.notify();
    return { plan, queueId, cost };
  }

  /** The caller's job of that model, not deleted (404 otherwise, without saying which). */
  find(model: string, queueId: string, auth: AuthContext | undefined): JobRow {
    const job = this.jobs.get(queueId);
    if (!job || job.kind !== VIDEO_JOB || job.model !== model || job.deletedAt !== null || (job.accountId !== null && job.accountId !== auth?.accountId)) {
      throw new NotFoundError("Media could not be found. The request may be invalid, expired, or deleted.");
    }
    return job;
  }

  status(job: JobRow): VideoStatusResponse {
    const now = Date.now();
    const response: VideoStatusResponse = {
      status: "PROCESSING",
      average_execution_time: this.averageExecutionMs(job, now),
      execution_duration: now - job.createdAt,
      state: job.status === "RUNNING" ? "RUNNING" : "QUEUED",
      progress: Math.round(job.progress * 1000) / 1000,
    };
    if (job.status === "QUEUED") response.queue_position = jobsAhead(this.db, job) + 1;
    return response;
  }

  /** P80 of this model's recent run times; without history, what the running job's progress implies. */
  private averageExecutionMs(job: JobRow, now: number): number {
    const times = recentExecutionTimes(this.db, job.model, 50).sort((a, b) => a - b);
    if (times.length) return times[Math.min(times.length - 1, Math.floor(times.length * 0.8))]!;
    if (job.status === "RUNNING" && job.startedAt !== null && job.progress > 0.02) return Math.round((now - job.startedAt) / job.progress);
    return 0;
  }

  /** The finished video's bytes. */
  read(job: JobRow): Buffer {
    return readFileSync(job.resultPath!);
  }

  complete(job: JobRow): void {
    if (job.status === "QUEUED" || job.status === "RUNNING") {
      throw InvalidRequestError.forField(["queue_id"], "the video is still processing; complete it after it is retrieved");
    }
    this.jobs.deleteResult(job);
  }
}
