import type { z } from "zod";

/**
 * One documented HTTP operation. Each endpoint group lists its operations in
 * `src/api/<group>/operations.ts`, next to the zod schemas its routes validate with, and
 * `buildOpenApiDocument` turns them into the served OpenAPI document: the schemas are the
 * same objects the routes parse with, so the document cannot describe a different shape.
 */

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

/**
 * Who may call an operation. Decides the security requirement and the error responses the
 * authentication step can give (401, 402, 403), so operations do not repeat them.
 * - `public`: no credentials.
 * - `apiKey`: `Authorization: Bearer <API key>`, inference or admin.
 * - `adminKey`: an admin API key (an inference key gets 403).
 * - `paid`: an API key or a wallet sign-in (SIGN-IN-WITH-X); no credentials at all get the
 *   x402 discovery 402, too little credit the INSUFFICIENT_BALANCE 402.
 * - `wallet`: a wallet sign-in only.
 */
export type Access = "public" | "apiKey" | "adminKey" | "paid" | "wallet";

/** A JSON Schema written by hand, for bodies that are not JSON (audio bytes, CSV, event streams). */
export interface RawSchema {
  type: "string";
  format?: "binary";
  description?: string;
  contentMediaType?: string;
}

/** A server-sent event stream whose `data:` lines are JSON of one schema. */
export interface SseContent {
  sse: z.ZodType;
  description: string;
}

/** A multipart/form-data body: the zod schema of its text fields, and its file parts (name → description). */
export interface MultipartContent {
  fields: z.ZodType;
  files: Readonly<Record<string, string>>;
}

/** Content type → the zod schema of that body (JSON), a raw schema for bytes and text, an event stream, or a multipart form. */
export type Content = Readonly<Record<string, z.ZodType | RawSchema | SseContent | MultipartContent>>;

export interface ResponseSpec {
  description: string;
  content?: Content;
  /** Response headers worth knowing: name → description. */
  headers?: Readonly<Record<string, string>>;
}

export interface Operation {
  method: HttpMethod;
  /** OpenAPI path under /api/v1, `{name}` for path parameters (Express `:name` and `*name`). */
  path: string;
  /** Unique across the document; clients generate method names from it. */
  operationId: string;
  summary: string;
  description?: string;
  /** Defaults to the group's tag. */
  tags?: readonly string[];
  access: Access;
  deprecated?: boolean;
  /** Path parameters: an object schema, one property per `{name}` in the path. */
  params?: z.ZodType;
  /** Query parameters: an object schema (transforms and refinements are fine: the input side is documented). */
  query?: z.ZodType;
  /** Request headers the operation reads: name → description. */
  headers?: Readonly<Record<string, { description: string; required?: boolean }>>;
  body?: { content: Content; description?: string; required?: boolean };
  /** Success responses (and any error whose body differs from the standard shape). */
  responses: Readonly<Record<number, ResponseSpec>>;
  /** Error statuses this operation can answer beyond what `access` and its inputs imply: status → when. */
  errors?: Readonly<Record<number, string>>;
}

/** An endpoint group as the document sees it: its tag, its operations and its schema module. */
export interface ApiGroup {
  tag: string;
  description: string;
  operations: readonly Operation[];
  /**
   * The group's `schema.ts` module (`import * as schemas from "./schema.js"`): every exported
   * zod schema becomes a named component (`#/components/schemas/<export name>`), so shared
   * shapes such as `UsageEntry` are written once and referenced.
   */
  schemas: Readonly<Record<string, unknown>>;
}

export const defineApiGroup = (group: ApiGroup): ApiGroup => group;

/** Helpers for common bodies. */
export const binary = (description: string, contentMediaType?: string): RawSchema => ({
  type: "string",
  format: "binary",
  description,
  ...(contentMediaType ? { contentMediaType } : {}),
});
export const text = (description: string): RawSchema => ({ type: "string", description });

/** Response headers shared by the inference endpoints. */
export const MODEL_HEADERS = {
  "x-service-model-id": "The model that served the request",
  "x-service-model-name": "Its display name",
  "x-service-model-router": "The engine that ran it (llama, onnx, transformers, upstream...)",
  "x-service-model-deprecation-warning": "Set when the model is deprecated",
  "x-service-model-deprecation-date": "When a deprecated model goes away",
} as const;
export const BALANCE_HEADERS = {
  "x-service-balance-usd": "The caller's USD balance before the request (bundled credits included)",
  "x-service-balance-diem": "The caller's DIEM balance before the request",
} as const;
export const RATE_LIMIT_HEADERS = {
  "x-ratelimit-limit-requests": "Requests allowed per minute",
  "x-ratelimit-remaining-requests": "Requests left in this minute",
  "x-ratelimit-reset-requests": "When the request window resets (Unix seconds)",
  "x-ratelimit-limit-tokens": "Tokens allowed per minute (text models)",
  "x-ratelimit-remaining-tokens": "Tokens left in this minute",
  "x-ratelimit-reset-tokens": "Seconds until the token window resets",
} as const;
export const COST_HEADERS = {
  "x-service-cost-usd": "What the request was charged, USD",
  "x-service-cost-diem": "What the request was charged, DIEM",
} as const;
/** Request headers the provider's document lists on its operations, for the same operations here. */
export const ACCEPT_ENCODING_HEADER = {
  "Accept-Encoding": { description: "Compression of the response: gzip or br (whole JSON bodies of 1 KB and more; never event streams or audio)" },
} as const;
export const SIWX_HEADER = {
  "SIGN-IN-WITH-X": {
    description: "The wallet's sign-in: base64 JSON of {address, message, signature, chainId} (X-Sign-In-With-X is accepted too)",
    required: true,
  },
} as const;

export const INFERENCE_HEADERS = { ...MODEL_HEADERS, ...BALANCE_HEADERS, ...RATE_LIMIT_HEADERS } as const;

/** Errors of the engines behind inference endpoints. */
export const INFERENCE_ERRORS = {
  403: "The API key's `modelPrivacy` excludes this model",
  404: "The model does not exist (or is not of this endpoint's type)",
  500: "Inference failed",
  503: "The model is at capacity or could not be loaded",
  504: "The request took too long (stream instead)",
} as const;
