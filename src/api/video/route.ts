import { Router } from "express";
import { jobFollowUpHeaders } from "../../http/jobFollowUpHeaders.js";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { metered } from "../../http/meteredRequest.js";
import { sendStoredFile } from "../../http/sendStoredFile.js";
import { parse, requireJson } from "../../http/parse.js";
import { CompleteVideoRequest, QueueVideoRequest, type QueueVideoResponse, QuoteVideoRequest, RetrieveVideoRequest } from "./schema.js";
import { unsupportedVideoParameters, VideoFailedError, VideoService } from "./service.js";

export type VideoRouterDeps = Pick<AppDeps, "config" | "models" | "db" | "credits" | "jobs" | "limits" | "authenticate" | "jsonBody">;

export function videoRouter(deps: VideoRouterDeps): Router {
  const service = new VideoService(deps.models, deps.db, deps.credits, deps.jobs, deps.config);
  const router = Router();

  router.post("/video/quote", deps.authenticate, deps.jsonBody, (req, res) => {
    // A quote runs no model and is not paid: the account window.
    res.set(deps.limits.admitAccount(res.locals.ctx));
    requireJson(req);
    const body = parse(QuoteVideoRequest, req.body);
    const quote = service.quote(body);
    const unsupported = unsupportedVideoParameters(body);
    if (unsupported.length > 0) res.set("x-service-unsupported-parameters", unsupported.join(","));
    res.json({ quote });
  });

  router.post("/video/queue", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/video/queue" }, async (paid) => {
      requireJson(req);
      const body = parse(QueueVideoRequest, req.body);
      const entry = deps.models.get(body.model, "video");
      paid.admit(entry, "video_queue");
      paid.record(entry.id);
      // The job is charged in full when queued (by the service, not a meter): this response shows that charge.
      const { queueId, cost } = await service.queue(body, paid.ctx.auth, paid.signal, paid.ctx.holdBytes);
      paid.serve(entry, "hearth-jobs");
      const unsupported = unsupportedVideoParameters(body);
      if (unsupported.length > 0) res.set("x-service-unsupported-parameters", unsupported.join(","));
      res.set(costHeaders(cost)).json({ model: entry.id, queue_id: queueId } satisfies QueueVideoResponse);
    }),
  );

  router.post("/video/retrieve", deps.authenticate, deps.jsonBody, (req, res, next) => {
    requireJson(req);
    const body = parse(RetrieveVideoRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = deps.models.get(body.model, "video");
    jobFollowUpHeaders(deps, res, entry);
    const job = service.find(entry.id, body.queue_id, ctx.auth);
    if (job.status === "FAILED") throw new VideoFailedError(job);
    if (job.status !== "COMPLETED") {
      res.json(service.status(job));
      return;
    }
    res.type(job.resultContentType ?? "video/mp4");
    sendStoredFile(res, service.mediaPath(job), next);
    if (body.delete_media_on_completion) res.once("finish", () => service.complete(job));
  });

  router.post("/video/complete", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(CompleteVideoRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = deps.models.get(body.model, "video");
    jobFollowUpHeaders(deps, res, entry);
    service.complete(service.find(entry.id, body.queue_id, ctx.auth));
    res.json({ success: true });
  });

  return router;
}
