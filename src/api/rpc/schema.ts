import { z } from "zod";

export const MAX_BATCH = 100;

/** One JSON-RPC 2.0 call, as the reference describes the proxy's body. */
export const JsonRpcCall = z.looseObject({
  jsonrpc: z.literal("2.0").optional(),
  method: z.string().min(1).max(128),
  params: z.array(z.unknown()).optional(),
  id: z.union([z.number().int(), z.string().max(256), z.null()]).optional(),
});
export type JsonRpcCall = z.infer<typeof JsonRpcCall>;

export const JsonRpcBody = z.union([JsonRpcCall, z.array(JsonRpcCall).min(1, "a batch needs at least one call").max(MAX_BATCH, `a batch holds at most ${MAX_BATCH} calls`)]);

export const IdempotencyKey = z.string().regex(/^[A-Za-z0-9_-]{1,255}$/, "Idempotency-Key must match [A-Za-z0-9_-]{1,255}");

export const JsonRpcResponseItem = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.number(), z.string(), z.null()]),
  result: z.unknown().optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
});
export type JsonRpcResponseItem = z.infer<typeof JsonRpcResponseItem>;

export const RpcNetworksResponse = z.object({ networks: z.array(z.string()) });
export type RpcNetworksResponse = z.infer<typeof RpcNetworksResponse>;
