import { z } from "zod";
import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const rpcApi = defineApiGroup({
  tag: "Crypto RPC",
  description: "A metered JSON-RPC proxy to blockchain nodes the operator configured.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/crypto/rpc/networks",
      operationId: "listCryptoRpcNetworks",
      summary: "List the proxied networks",
      access: "public",
      responses: { 200: { description: "Network slugs for POST /crypto/rpc/{network}", content: { "application/json": schemas.RpcNetworksResponse } } },
    },
    {
      method: "post",
      path: "/crypto/rpc/{network}",
      operationId: "cryptoRpcProxy",
      summary: "Forward a JSON-RPC call or batch",
      access: "paid",
      params: z.object({ network: z.string().describe("A slug from GET /crypto/rpc/networks") }),
      headers: { "Idempotency-Key": { description: "Replays the stored answer for a repeated key and body ([A-Za-z0-9_-]{1,255})" } },
      body: { content: { "application/json": schemas.JsonRpcBody } },
      responses: {
        200: {
          description: "The node's answer: one item, or an array for a batch",
          headers: {
            "x-service-rpc-credits": "Credits charged",
            "x-service-rpc-cost-usd": "What they cost",
            "Idempotent-Replayed": '"true" when this is a stored answer',
          },
          content: { "application/json": z.union([schemas.JsonRpcResponseItem, z.array(schemas.JsonRpcResponseItem)]) },
        },
      },
      errors: { 404: "No such network", 500: "The upstream node failed, timed out or answered something that is not JSON-RPC (`code` UPSTREAM_RPC_ERROR; nothing is charged)" },
    },
  ],
});
