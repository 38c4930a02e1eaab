import type { Response } from "express";
import type { ModelEntry } from "../config/modelRegistry.js";

/** The x-service-model-* headers every model-backed response carries (and a deprecation notice where the registry has one). */
export function setModelHeaders(res: Response, entry: ModelEntry, router: string): void {
  res.setHeader("x-service-model-id", entry.id);
  res.setHeader("x-service-model-name", entry.name ?? entry.id);
  res.setHeader("x-service-model-router", router);
  if (entry.deprecation) {
    res.setHeader("x-service-model-deprecation-warning", entry.deprecation.warning);
    res.setHeader("x-service-model-deprecation-date", entry.deprecation.date);
  }
}
