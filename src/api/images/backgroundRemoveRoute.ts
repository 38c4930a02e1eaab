import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { backgroundRemovalCost } from "../../billing/pricing.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { NotFoundError } from "../../errors.js";
import { metered } from "../../http/meteredRequest.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { BackgroundRemoveImageRequest } from "./backgroundRemoveSchema.js";
import { encodeRgbaPng } from "../../media/image.js";
import { readImageInput, readImageRequest } from "./imageInput.js";

export type BackgroundRemoveRouterDeps = Pick<AppDeps, "config" | "models" | "credits" | "limits" | "db" | "authenticate" | "jsonBody" | "multipartBody">;

/** The background-removal model a request names, or the node's first; a 404 that says so when there is none. */
export function backgroundRemovalModel(models: ModelManager, id: string | undefined): ModelEntry {
  const chosen = id ?? models.defaultFor("background-removal")?.id;
  if (!chosen) throw new NotFoundError("Background removal (POST /image/background-remove) is not available on this node: no background-removal model is configured.");
  return models.get(chosen, "background-removal");
}

/** POST /image/background-remove: the picture as a PNG with an alpha channel, transparent where the background was. */
export function backgroundRemoveRouter(deps: BackgroundRemoveRouterDeps): Router {
  const router = Router();

  router.post("/image/background-remove", deps.authenticate, deps.multipartBody, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/image/background-remove" }, async (paid) => {
      const { body, upload } = readImageRequest(req, BackgroundRemoveImageRequest);
      const entry = backgroundRemovalModel(deps.models, body.model);
      paid.admit(entry, "image");
      paid.record(entry.id);
      const meter = paid.meterFor(entry.id);
      meter.reserve(backgroundRemovalCost(entry, 1));
      const picture = await readImageInput({ upload, base64: body.image, url: body.image_url }, deps.config, paid.signal, paid.ctx.holdBytes);
      const { engine } = paid.hold(await deps.models.acquire(entry.id, "background"));
      paid.serve(entry, engine.router);
      const cut = await engine.removeBackground({ ...picture, signal: paid.signal });
      const png = await encodeRgbaPng(cut.rgba, cut.width, cut.height);
      const cost = meter.settle(backgroundRemovalCost(entry, 1));
      res.set(costHeaders(cost));
      res.type("image/png").send(png);
    }),
  );

  return router;
}
