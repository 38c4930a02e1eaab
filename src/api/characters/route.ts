import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { parse, requireJson } from "../../http/parse.js";
import { isOperatorKey } from "../../store/apiKeys.js";
import { characterRatings } from "../../store/characterReviews.js";
import { CharacterReviews } from "./CharacterReviews.js";
import { CharacterReviewsQuery, CreateCharacterReviewRequest, ListCharactersQuery } from "./schema.js";
import { CharacterService } from "./service.js";

export type CharactersRouterDeps = Pick<AppDeps, "characters" | "authenticateKey" | "jsonBody" | "db" | "now">;

export function charactersRouter(deps: CharactersRouterDeps): Router {
  const service = new CharacterService(deps.characters, (viewer) => characterRatings(deps.db, viewer));
  const reviews = new CharacterReviews(deps.db, deps.characters, deps.now);
  const router = Router();
  router.get("/characters", deps.authenticateKey, (req, res) => {
    const query = parse(ListCharactersQuery, req.query);
    const { records, total } = service.list(query, res.locals.ctx.auth?.accountId);
    res.setHeader("x-pagination-limit", String(query.limit));
    res.setHeader("x-pagination-page", String(Math.floor(query.offset / query.limit) + 1));
    res.setHeader("x-pagination-total", String(total));
    res.setHeader("x-pagination-total-pages", String(Math.ceil(total / query.limit)));
    res.json({ object: "list", data: records });
  });
  router.get("/characters/:slug", deps.authenticateKey, (req, res) => {
    res.json({ object: "character", data: service.get(String(req.params.slug), res.locals.ctx.auth?.accountId) });
  });
  router.get("/characters/:slug/reviews", deps.authenticateKey, (req, res) => {
    const query = parse(CharacterReviewsQuery, req.query);
    const list = reviews.list(String(req.params.slug), query, res.locals.ctx.auth?.accountId);
    res.setHeader("x-pagination-limit", String(query.pageSize));
    res.setHeader("x-pagination-page", String(query.page));
    res.setHeader("x-pagination-total", String(list.pagination.total));
    res.setHeader("x-pagination-total-pages", String(list.pagination.totalPages));
    res.json(list);
  });
  router.post("/characters/:slug/reviews", deps.authenticateKey, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(CreateCharacterReviewRequest, req.body);
    res.status(201).json(reviews.create(String(req.params.slug), body, res.locals.ctx.auth!.accountId));
  });
  router.delete("/characters/:slug/reviews/:id", deps.authenticateKey, (req, res) => {
    const auth = res.locals.ctx.auth!;
    const operator = auth.kind === "apiKey" && isOperatorKey(deps.db, auth.apiKeyId);
    reviews.delete(String(req.params.slug), String(req.params.id), { accountId: auth.accountId, operator });
    res.json({ id: String(req.params.id), object: "review", deleted: true });
  });
  return router;
}
