import { z } from "zod";
import { defineApiGroup, RATE_LIMIT_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const keysApi = defineApiGroup({
  tag: "API Keys",
  description: "Managing API keys (admin keys) and reading rate limits (any key).",
  schemas,
  operations: [
    {
      method: "get",
      path: "/api_keys/rate_limits",
      operationId: "getApiKeyRateLimits",
      summary: "The calling key's rate limits and balances",
      access: "apiKey",
      responses: { 200: { description: "Limits per model", content: { "application/json": schemas.RateLimitsResponse } } },
    },
    ...(["/api_keys/rate_limits/log", "/api_keys/rate_limit_logs"] as const).map((path, i) => ({
      method: "get" as const,
      path,
      operationId: i === 0 ? "getApiKeyRateLimitLogs" : "getApiKeyRateLimitLogsAlias",
      summary: i === 0 ? "Recent rate-limit refusals of the account" : "Recent rate-limit refusals (alias of /api_keys/rate_limits/log)",
      access: "apiKey" as const,
      responses: { 200: { description: "The most recent refusals", content: { "application/json": schemas.RateLimitLogResponse } } },
    })),
    {
      method: "get",
      path: "/api_keys/generate_web3_key",
      operationId: "getApiKeyGenerateWeb3Key",
      summary: "A token for a wallet to sign",
      description: "Single use, valid for the wallet config's `web3Keys.tokenTtlSeconds` (default 300). 403 when `web3Keys.allow` is `none`.",
      access: "public",
      responses: { 200: { description: "The token", content: { "application/json": schemas.Web3KeyToken } } },
      errors: { 403: "This node makes no keys for wallets" },
    },
    {
      method: "post",
      path: "/api_keys/generate_web3_key",
      operationId: "postApiKeyGenerateWeb3Key",
      summary: "Create an API key with a wallet's signature",
      description:
        "Sign the token's text with the wallet (personal_sign, EIP-191) and send it with the address and the key's settings. " +
        "The key belongs to the wallet's account (the one its sign-in-with-x and top-ups use). Which wallets may is the operator's " +
        "choice (`web3Keys.allow`: `credit`, the default, for wallets with credit here; `any`; `allowlist`; `none`); ADMIN keys only " +
        "with `web3Keys.allowAdminKeys`. A token works once; an altered or expired one, or a signature by another wallet, is a 401.",
      access: "public",
      body: { content: { "application/json": schemas.Web3KeyRequest } },
      responses: { 200: { description: "The new key (its secret shown this once)", content: { "application/json": schemas.CreateApiKeyResponse } } },
      errors: { 401: "Bad, altered, expired or used token, or the signature is not the address's", 403: "The operator's policy refuses this wallet or key type" },
    },
    {
      method: "get",
      path: "/api_keys",
      operationId: "getApiKeys",
      summary: "List the account's API keys",
      access: "adminKey",
      query: schemas.KeyFieldsQuery,
      responses: { 200: { description: "The keys (never their secrets)", content: { "application/json": schemas.ApiKeyList } } },
    },
    {
      method: "get",
      path: "/api_keys/{id}",
      operationId: "getApiKeyById",
      summary: "Get one API key",
      access: "adminKey",
      query: schemas.KeyFieldsQuery,
      params: z.object({ id: z.string() }),
      responses: { 200: { description: "The key", content: { "application/json": schemas.GetApiKeyResponse } } },
      errors: { 404: "No such key in this account" },
    },
    {
      method: "post",
      path: "/api_keys",
      operationId: "createApiKey",
      summary: "Create an API key",
      description:
        "The secret is in the response, once. At most 20 keys may be created per minute. An `expiresAt` in the past (the provider's own " +
        "example is one) is a 400 naming it: a key that could never be used is taken for a mistake rather than made.",
      access: "adminKey",
      query: schemas.KeyFieldsQuery,
      body: { content: { "application/json": schemas.CreateApiKeyRequest } },
      responses: { 200: { description: "The new key and its secret", headers: RATE_LIMIT_HEADERS, content: { "application/json": schemas.CreateApiKeyResponse } } },
      errors: { 429: "More than 20 keys created in a minute" },
    },
    {
      method: "patch",
      path: "/api_keys",
      operationId: "updateApiKey",
      summary: "Update an API key",
      access: "adminKey",
      query: schemas.KeyFieldsQuery,
      body: { content: { "application/json": schemas.UpdateApiKeyRequest } },
      responses: { 200: { description: "The updated key", content: { "application/json": schemas.UpdateApiKeyResponse } } },
      errors: { 403: "An inference key was used, or the key is an operator key and the caller is not the operator", 404: "No such key in this account" },
    },
    {
      method: "delete",
      path: "/api_keys",
      operationId: "deleteApiKey",
      summary: "Revoke an API key",
      description: "Without `id` the key making the request revokes itself.",
      access: "adminKey",
      query: schemas.DeleteApiKeyQuery,
      responses: { 200: { description: "Revoked", content: { "application/json": schemas.DeleteApiKeyResponse } } },
      errors: { 403: "An inference key was used, or the key is an operator key and the caller is not the operator", 404: "No such key in this account" },
    },
  ],
});
