import type { RequestHandler } from "express";
import type { ServerConfig } from "../config/serverSettings.js";
import type { BodyBudget } from "./bodyBudget.js";
import { readWholeBody } from "./readWholeBody.js";

/**
 * The JSON body size each route accepts, from what the route can use. Routes that take files
 * (chat's file and audio parts, image inputs) hold an upload of --max-upload-mb base64-encoded
 * (4/3 larger) plus room for the rest; every other route gets what its largest valid request
 * needs, with room for JSON escaping (a character may take 6 bytes as \uXXXX).
 */
export function routeBodyLimits(config: Pick<ServerConfig, "maxUploadMb">): (route: string) => number {
  const uploads = uploadJsonBodyLimit(config);
  const limits: Record<string, number> = {
    "POST /chat/completions": uploads,
    "POST /responses": uploads,
    "POST /image/generate": uploads,
    "POST /images/generations": uploads,
    "POST /image/upscale": uploads,
    "POST /image/edit": uploads,
    "POST /image/multi-edit": uploads,
    "POST /image/background-remove": uploads,
    // Up to 2,048 inputs of an embedding model's context each: 8 MB holds 2,048 inputs of ~4,000 characters, or a few inputs of a long-context model.
    "POST /embeddings": 8e6,
    // A raw prompt (a source file and its FIM suffix, or lists of prompts or token ids), refused past the context by length or a sliced count.
    "POST /completions": 8e6,
    // 4,096 characters of input and a 500-character prompt.
    "POST /audio/speech": 64e3,
    // Long speech: a text of at most 100,000 characters (AUDIO_JOB_MAX_CHARACTERS), 4 UTF-8 bytes each at most, and escaping room.
    "POST /audio/queue": 1e6,
    "POST /audio/quote": 16e3,
    "POST /audio/retrieve": 16e3,
    "POST /audio/complete": 16e3,
    // Prompts of at most 20,000 characters and a first-frame picture as a data: URL (video/queue); the other video calls take ids.
    "POST /video/queue": uploads,
    "POST /video/quote": 16e3,
    "POST /video/retrieve": 16e3,
    "POST /video/complete": 16e3,
    "POST /api_keys": 16e3,
    "PATCH /api_keys": 16e3,
    "POST /admin/accounts/:id/credits": 16e3,
    // A JSON-RPC batch (signed transactions included).
    "POST /crypto/rpc/:network": 1e6,
  };
  return (route) => limits[route] ?? DEFAULT_JSON_LIMIT;
}

/** A JSON body that carries an upload: --max-upload-mb base64-encoded, and room for the rest of the request. */
function uploadJsonBodyLimit(config: Pick<ServerConfig, "maxUploadMb">): number {
  return Math.max(25e6, Math.ceil((config.maxUploadMb * 4e6) / 3) + 1e6);
}

/** A multipart body: one file of --max-upload-mb, and 1 MB for the other fields and the part headers. */
function multipartBodyLimit(config: Pick<ServerConfig, "maxUploadMb">): number {
  return uploadByteLimit(config) + 1_000_000;
}

/** The largest body any route accepts (the body budget must hold at least one). */
export function largestBodyBytes(config: Pick<ServerConfig, "maxUploadMb">): number {
  return Math.max(uploadJsonBodyLimit(config), multipartBodyLimit(config));
}

/** Any JSON route not listed: enough for every small request this API has. */
export const DEFAULT_JSON_LIMIT = 100e3;

/** The largest file a multipart upload may carry, in bytes (--max-upload-mb). */
export function uploadByteLimit(config: Pick<ServerConfig, "maxUploadMb">): number {
  return Math.round(config.maxUploadMb * 1e6);
}

/**
 * Reads a multipart/form-data body whole into req.body (a Buffer; src/http/multipart.ts splits
 * it; readWholeBody.ts reads it), once the body budget admits it. Any other content type passes through untouched, to the
 * JSON parser after it.
 */
export function multipartBodyParser(config: Pick<ServerConfig, "maxUploadMb">, budget: BodyBudget): RequestHandler {
  const limit = multipartBodyLimit(config);
  return (req, res, next) => {
    if (!req.is("multipart/form-data")) {
      next();
      return;
    }
    const refusal = budget.admit(req, res, limit);
    if (refusal) {
      next(refusal);
      return;
    }
    readWholeBody(req, limit).then((body) => {
      req.body = body;
      // What body-parser marks a body read with: no parser after this one reads it again.
      (req as { _body?: boolean })._body = true;
      next();
    }, next);
  };
}
