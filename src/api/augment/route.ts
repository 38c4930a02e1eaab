import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { uploadByteLimit } from "../../http/bodyLimits.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { metered } from "../../http/meteredRequest.js";
import { readMultipart } from "../../http/multipart.js";
import { parse, requireJson } from "../../http/parse.js";
import { AugmentService } from "./AugmentService.js";
import { TextParserFields, WebScrapeRequest, WebSearchRequest } from "./schema.js";

export type AugmentRouterDeps = Pick<AppDeps, "config" | "models" | "db" | "credits" | "limits" | "authenticate" | "jsonBody" | "multipartBody">;

/**
 * Each operation is one metered call: admitted by the key's `augment` rate limit, its price
 * held before the work and charged once when it succeeds (nothing when it fails or the client
 * leaves), and a usage row naming the operation.
 */
export function augmentRouter(deps: AugmentRouterDeps): Router {
  const service = new AugmentService(deps.config, deps.models);
  const maxUploadBytes = uploadByteLimit(deps.config);
  const router = Router();

  router.post("/augment/search", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/augment/search" }, async (paid) => {
      requireJson(req);
      const body = parse(WebSearchRequest, req.body);
      service.requireSearch();
      paid.admitEndpoint("/augment/search", "augment");
      if (body.search_provider !== undefined) res.set("x-service-unsupported-parameters", "search_provider");
      paid.record("web-search");
      const meter = paid.meterFor("web-search");
      meter.reserve(service.searchCost());
      const result = await service.search(body, paid.signal);
      res.set(costHeaders(meter.settle(service.searchCost()))).json(result);
    }),
  );

  router.post("/augment/scrape", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/augment/scrape" }, async (paid) => {
      requireJson(req);
      const body = parse(WebScrapeRequest, req.body);
      service.requireScraping();
      paid.admitEndpoint("/augment/scrape", "augment");
      paid.record("web-scrape");
      const meter = paid.meterFor("web-scrape");
      meter.reserve(service.scrapeCost());
      const result = await service.scrape(body.url, paid.signal);
      res.set(costHeaders(meter.settle(service.scrapeCost()))).json(result);
    }),
  );

  router.post("/augment/text-parser", deps.authenticate, deps.multipartBody, (req, res) =>
    metered(deps, res, { endpoint: "/augment/text-parser" }, async (paid) => {
      const form = readMultipart(req);
      const fields = parse(TextParserFields, form.textFields());
      paid.admitEndpoint("/augment/text-parser", "augment");
      paid.record("text-parser");
      const meter = paid.meterFor("text-parser");
      meter.reserve(service.parseCost());
      const result = await service.parse(form.file("file"), maxUploadBytes, paid.signal);
      res.set(costHeaders(meter.settle(service.parseCost())));
      if (fields.response_format === "text") res.type("text/plain").send(result.text);
      else res.json(result);
    }),
  );

  return router;
}
