import { ACCOUNT_RATE_LIMIT_HEADERS } from "../billing/operations.js";
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
      responses: {
        200: { description: "The matching characters", headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, ...PAGINATION_HEADERS }, content: { "application/json": schemas.CharacterList } },
      },
    },
    {
      method: "get",
      path: "/characters/{slug}",
      operationId: "getCharacterBySlug",
      summary: "Get one character",
      access: "apiKey",
      params: z.object({ slug: z.string() }),
      responses: { 200: { description: "The character", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.CharacterResponse } } },
      errors: { 404: "No such character" },
    },
    {
      method: "get",
      path: "/characters/{slug}/reviews",
      operationId: "getCharacterReviews",
      summary: "A character's reviews",
      description: "Newest first. `isOwner` is true on the caller's own review.",
      access: "apiKey",
      params: z.object({ slug: z.string() }),
      query: schemas.CharacterReviewsQuery,
      responses: {
        200: {
          description: "A page of reviews",
          headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, ...PAGINATION_HEADERS, "x-pagination-total": "Reviews of the character" },
          content: { "application/json": schemas.CharacterReviewList },
        },
      },
      errors: { 404: "No such character" },
    },
    {
      method: "post",
      path: "/characters/{slug}/reviews",
      operationId: "createCharacterReview",
      summary: "Review a character",
      description: "This node's extension (the provider documents reading reviews only): one review per account and character; a second is a 409.",
      access: "apiKey",
      params: z.object({ slug: z.string() }),
      body: { content: { "application/json": schemas.CreateCharacterReviewRequest } },
      responses: { 201: { description: "The review", content: { "application/json": schemas.CharacterReview } } },
      errors: { 404: "No such character", 409: "This account already reviewed the character" },
    },
    {
      method: "delete",
      path: "/characters/{slug}/reviews/{id}",
      operationId: "deleteCharacterReview",
      summary: "Delete a review",
      description: "This node's extension: by the review's author, or with the node operator's key (moderation).",
      access: "apiKey",
      params: z.object({ slug: z.string(), id: z.string() }),
      responses: { 200: { description: "Deleted", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.DeletedCharacterReview } } },
      errors: { 403: "Neither the author nor the operator", 404: "No such review of this character" },
    },
  ],
});
