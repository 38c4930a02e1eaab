import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { jobFollowUpHeaders } from "../../http/jobFollowUpHeaders.js";
import { metered } from "../../http/meteredRequest.js";
import { sendStoredFile } from "../../http/sendStoredFile.js";
import { parse, requireJson } from "../../http/parse.js";
import { AudioFailedError, AudioJobService } from "./AudioJobService.js";
import { CompleteAudioRequest, QueueAudioRequest, type QueueAudioResponse, QuoteAudioRequest, RetrieveAudioRequest } from "./jobSchema.js";
import { SpeechService } from "./SpeechService.js";

export type AudioJobsRouterDeps = Pick<AppDeps, "config" | "models" | "db" | "now" | "credits" | "jobs" | "limits" | "authenticate" | "jsonBody">;

/** POST /audio/quote, /audio/queue, /audio/retrieve, /audio/complete: long speech as durable jobs. */
export function audioJobsRouter(deps: AudioJobsRouterDeps): Router {
  const speech = new SpeechService(deps.models, deps.db, deps.now, deps.config.requestTimeoutMs);
  const service = new AudioJobService(deps.models, speech, deps.db, deps.credits, deps.jobs);
  const router = Router();

  router.post("/audio/quote", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    res.json({ quote: service.quote(parse(QuoteAudioRequest, req.body)) });
  });

  router.post("/audio/queue", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/audio/queue" }, async (paid) => {
      requireJson(req);
      const body = parse(QueueAudioRequest, req.body);
      const entry = service.entryFor(body.model);
      paid.admit(entry, "audio");
      paid.record(entry.id);
      // Charged in full when queued (by the service, in the transaction that stores the job): the cost headers show it.
      const { queueId, cost } = await service.queue(body, paid.ctx.auth);
      paid.serve(entry, "hearth-jobs");
      res.set(costHeaders(cost)).json({ model: entry.id, queue_id: queueId, status: "QUEUED" } satisfies QueueAudioResponse);
    }),
  );

  router.post("/audio/retrieve", deps.authenticate, deps.jsonBody, (req, res, next) => {
    requireJson(req);
    const body = parse(RetrieveAudioRequest, req.body);
    const entry = service.entryFor(body.model);
    jobFollowUpHeaders(deps, res, entry);
    const job = service.find(entry.id, body.queue_id, res.locals.ctx.auth);
    if (job.status === "FAILED") throw new AudioFailedError(job);
    if (job.status !== "COMPLETED") {
      res.json(service.status(job));
      return;
    }
    res.type(job.resultContentType ?? "application/octet-stream");
    sendStoredFile(res, service.mediaPath(job), next);
    if (body.delete_media_on_completion) res.once("finish", () => service.complete(job));
  });

  router.post("/audio/complete", deps.authenticate, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(CompleteAudioRequest, req.body);
    const entry = service.entryFor(body.model);
    jobFollowUpHeaders(deps, res, entry);
    service.complete(service.find(entry.id, body.queue_id, res.locals.ctx.auth));
    res.json({ success: true });
  });

  return router;
}
