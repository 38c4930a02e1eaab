import type { Response } from "express";
import type { AppDeps } from "../appDeps.js";
import { balanceHeaders } from "../billing/balanceHeaders.js";
import type { ModelEntry } from "../config/modelRegistry.js";
import { setModelHeaders } from "./modelHeaders.js";

/**
 * Retrieve and complete of a durable job (video, audio) answer with the model's headers and the
 * caller's balances, as every model call does. They are rate-limited in the polling class
 * (`video_retrieve`, which audio jobs share), not in the class that queued the job.
 */
export function jobFollowUpHeaders(deps: Pick<AppDeps, "limits" | "credits">, res: Response, entry: ModelEntry): void {
  const ctx = res.locals.ctx;
  res.set(deps.limits.admit(ctx, entry, "video_retrieve"));
  setModelHeaders(res, entry, "hearth-jobs");
  if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
}
