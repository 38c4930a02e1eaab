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

export interface JsonRpcResponseItem {
  jsonrpc: "2.0";
  id: number | string | null;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export interface RpcNetworksResponse {
  networks: string[];
}
