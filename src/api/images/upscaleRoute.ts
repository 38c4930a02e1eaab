import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { upscaleCost } from "../../billing/pricing.js";
import { metered } from "../../http/meteredRequest.js";
import { readImageInput, readImageRequest } from "./imageInput.js";
import { UpscaleService } from "./UpscaleService.js";
import { UpscaleImageRequest } from "./upscaleSchema.js";

export type UpscaleRouterDeps = Pick<AppDeps, "config" | "models" | "credits" | "limits" | "db" | "authenticate" | "jsonBody" | "multipartBody">;

/** POST /image/upscale: JSON with a base64 image, or multipart with the file; answers the PNG. */
export function upscaleRouter(deps: UpscaleRouterDeps): Router {
  const service = new UpscaleService(deps.models);
  const router = Router();

  router.post("/image/upscale", deps.authenticate, deps.multipartBody, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/image/upscale" }, async (paid) => {
      const { body, upload } = readImageRequest(req, UpscaleImageRequest);
      const entry = service.entryFor(body.model);
      paid.admit(entry, "image");
      paid.record(entry.id);
      const meter = paid.meterFor(entry.id);
      meter.reserve(upscaleCost(entry, body.scale));
      const { engine } = paid.hold(await deps.models.acquire(entry.id, "upscale"));
      paid.serve(entry, engine.router);
      const picture = await readImageInput({ upload, base64: body.image }, deps.config, paid.signal);
      const plan = service.plan(entry, body, picture, engine.modelScale);
      const png = await service.run(plan, engine, paid.signal);
      const cost = meter.settle(upscaleCost(entry, plan.requestedScale));
      paid.usage = { finishReason: `upscaled:${plan.targetWidth}x${plan.targetHeight}` };
      res.set(costHeaders(cost));
      if (plan.unsupported.length > 0) res.set("x-service-unsupported-parameters", plan.unsupported.join(","));
      res.type("image/png").send(png);
    }),
  );

  return router;
}
