import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { parse } from "../../http/parse.js";
import { ListCharactersQuery } from "./schema.js";
import { CharacterService } from "./service.js";

export type CharactersRouterDeps = Pick<AppDeps, "characters" | "authenticateKey">;

export function charactersRouter(deps: CharactersRouterDeps): Router {
  const service = new CharacterService(deps.characters);
  const router = Router();
  router.get("/characters", deps.authenticateKey, (req, res) => {
    const query = parse(ListCharactersQuery, req.query);
    const { records, total } = service.list(query);
    res.setHeader("x-pagination-limit", String(query.limit));
    res.setHeader("x-pagination-page", String(Math.floor(query.offset / query.limit) + 1));
    res.setHeader("x-pagination-total", String(total));
    res.setHeader("x-pagination-total-pages", String(Math.ceil(total / query.limit)));
    res.json({ object: "list", data: records });
  });
  router.get("/characters/:slug", deps.authenticateKey, (req, res) => {
    res.json({ object: "character", data: service.get(String(req.params.slug)) });
  });
  return router;
}
