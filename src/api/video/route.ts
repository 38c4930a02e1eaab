import { Router } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { toErrorResponse } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../../http/modelHeaders.js";
import { CompleteVideoRequest, QueueVideoRequest, type QueueVideoResponse, QuoteVideoRequest, RetrieveVideoRequest } from "./schema.js";
import { VideoFailedError, VideoService } from "./service.js";

export function videoRouter(deps: AppDeps): Router {
  const service = new VideoService(deps.models, deps.db, deps.credits, deps.jobs);
  const router = Router();

  router.post("/video/quote", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    res.json({ quote: service.quote(parse(QuoteVideoRequest, req.body)) });
  });

  router.post("/video/queue", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(QueueVideoRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = deps.models.get(body.model, "video");
    res.set(deps.limits.admit(ctx, entry, "video_queue"));
    if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
    let status = 200;
    try {
      const { queueId, cost } = service.queue(body, ctx.auth);
      setModelHeaders(res, entry, "hearth-jobs");
      // The job is charged in full when queued: this response shows that charge.
      res.set(costHeaders(cost)).json({ model: entry.id, queue_id: queueId, cost } satisfies QueueVideoResponse);
    } catch (error) {
      status = toErrorResponse(error).status;
      throw error;
    } finally {
      recordRequestUsage(deps.db, ctx, {
        endpoint: "/video/queue",
        model: entry.id,
        status,
      });
    }
  });

  router.post("/video/retrieve", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(RetrieveVideoRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = deps.models.get(body.model, "video");
    res.set(deps.limits.admit(ctx, entry, "video_retrieve"));
    const job = service.find(entry.id, body.queue_id, ctx.auth);
    if (job.status === "FAILED") throw new VideoFailedError(job);
    if (job.status !== "COMPLETED") {
      res.json(service.status(job));
      return;
    }
    const video = service.read(job);
    res.type(job.resultContentType ?? "video/mp4").send(video);
    if (body.delete_media_on_completion) res.once("finish", () => service.complete(job));
  });

  router.post("/video/complete", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(CompleteVideoRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = deps.models.get(body.model, "video");
    res.set(deps.limits.admit(ctx, entry, "video_retrieve"));
    service.complete(service.find(entry.id, body.queue_id, ctx.auth));
    res.json({ success: true });
  });

  return router;
}
