import { z } from "zod";
import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const PAGINATION_HEADERS = {
  "x-pagination-limit": "Page size",
  "x-pagination-page": "This page (1-based)",
  "x-pagination-total": "Matching characters",
  "x-pagination-total-pages": "Pages in all",
};

export const charactersApi = defineApiGroup({
  tag: "Characters",
  description: "Personas with a system prompt and a model; chat with one through `service_parameters.character_slug`.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/characters",
      operationId: "listCharacters",
      summary: "List characters",
      access: "apiKey",
      query: schemas.ListCharactersQuery,
      responses: { 200: { description: "The matching characters", headers: PAGINATION_HEADERS, content: { "application/json": schemas.CharacterList } } },
    },
    {
      method: "get",
      path: "/characters/{slug}",
      operationId: "getCharacter",
      summary: "Get one character",
      access: "apiKey",
      params: z.object({ slug: z.string() }),
      responses: { 200: { description: "The character", content: { "application/json": schemas.CharacterResponse } } },
      errors: { 404: "No such character" },
    },
  ],
});
