import { Router, type Response } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { costHeaders } from "../../billing/costHeaders.js";
import type { Cost } from "../../billing/credits.js";
import { imageCost } from "../../billing/pricing.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import { NotFoundError, toErrorResponse } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import { IMAGE_FORMATS } from "../../media/image.js";
import type { ModelLease } from "../../models/ModelManager.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../../http/modelHeaders.js";
import { GenerateImageRequest, SimpleGenerateImageRequest, UNAVAILABLE_IMAGE_OPERATIONS, type GenerateImageResponse, type SimpleGenerateImageResponse } from "./schema.js";
import { ImageService, type ImageOutcome, type ImagePlan } from "./service.js";
import { ImageStyles } from "./styles.js";

const CLIENT_CLOSED_REQUEST = 499;

export function imagesRouter(deps: AppDeps): Router {
  const styles = ImageStyles.load(deps.config.configPath);
  const service = new ImageService(deps.models, styles, deps.config.requestTimeoutMs);
  const router = Router();

  for (const [path, operation] of Object.entries(UNAVAILABLE_IMAGE_OPERATIONS)) {
    router.post(path, () => {
      throw new NotFoundError(
        `${operation} (POST ${path}) is not available on this node. Hearth serves text-to-image generation: POST /image/generate and POST /images/generations.`,
      );
    });
  }

  router.get("/image/styles", (_req, res) => {
    res.json({ object: "list", data: styles.names() });
  });

  /**
   * The shared part of both generation endpoints: rate limit (image tier), credit hold for
   * every image, generation off the event loop, settlement, safety headers, usage row.
   * Returns undefined when the client left (nothing is sent or charged).
   */
  async function generate(plan: ImagePlan, res: Response, endpoint: string): Promise<(ImageOutcome & { cost: Cost }) | undefined> {
    const ctx = res.locals.ctx;
    res.set(deps.limits.admit(ctx, plan.entry, "image"));
    if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
    const meter = new RequestMeter(deps.credits, ctx, plan.entry.id);
    let status = 200;
    let images = 0;
    let lease: ModelLease<"image"> | undefined;
    try {
      meter.reserve(imageCost(plan.entry, { images: plan.variants, steps: plan.steps }));
      lease = await service.acquire(plan);
      const { engine } = lease;
      setModelHeaders(res, plan.entry, engine.router);
      const outcome = await service.generate(plan, engine, ctx.abort.signal);
      images = outcome.files.length;
      const cost = meter.settle(imageCost(plan.entry, { images, steps: plan.steps }));
      res.set(costHeaders(cost));
      res.setHeader("x-service-is-blurred", String(outcome.blurred));
      if (outcome.flagged !== null) res.setHeader("x-service-is-content-violation", String(outcome.flagged));
      // Safe mode needs a classifier: without one, say so instead of implying images were checked.
      if (plan.safeMode && !engine.safetyChecker) res.setHeader("x-service-safe-mode", "unavailable");
      return { ...outcome, cost };
    } catch (error) {
      if (ctx.abort.signal.aborted) {
        status = CLIENT_CLOSED_REQUEST;
        return undefined;
      }
      status = toErrorResponse(error).status;
      throw error;
    } finally {
      lease?.release();
      meter.settle([]);
      recordRequestUsage(deps.db, ctx, {
        endpoint,
        model: plan.entry.id,
        status,
        finishReason: status === 200 ? `images:${images}` : null,
      });
    }
  }

  router.post("/image/generate", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(GenerateImageRequest, req.body);
    const plan = service.planGenerate(body);
    const outcome = await generate(plan, res, "/image/generate");
    if (!outcome) return;
    if (body.return_binary) {
      res.type(IMAGE_FORMATS[plan.format]).send(outcome.files[0]);
      return;
    }
    const ctx = res.locals.ctx;
    const response: GenerateImageResponse = {
      id: `generate-image-${ctx.requestId}`,
      images: outcome.files.map((file) => file.toString("base64")),
      request: { ...body, seed: plan.seed },
      timing: {
        inferenceDuration: Math.round(outcome.result.inferenceMs),
        inferencePreprocessingTime: Math.round(outcome.result.preprocessMs),
        inferenceQueueTime: Math.round(outcome.result.queueMs),
        total: Date.now() - ctx.startedAt,
      },
      cost: outcome.cost,
    };
    res.json(response);
  });

  router.post("/images/generations", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(SimpleGenerateImageRequest, req.body);
    const plan = service.planSimple(body);
    const outcome = await generate(plan, res, "/images/generations");
    if (!outcome) return;
    // The reference's `url` is a data URL: Hearth keeps no image store to link to.
    const contentType = IMAGE_FORMATS[plan.format];
    const response: SimpleGenerateImageResponse = {
      created: Math.floor(res.locals.ctx.startedAt / 1000),
      data: outcome.files.map((file) =>
        body.response_format === "url" ? { url: `data:${contentType};base64,${file.toString("base64")}` } : { b64_json: file.toString("base64") },
      ),
      cost: outcome.cost,
    };
    res.json(response);
  });

  return router;
}
