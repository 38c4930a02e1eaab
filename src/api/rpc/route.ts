import { createHash } from "node:crypto";
import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { RateLimitError } from "../../errors.js";
import { metered } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { DAY_MS } from "../../time.js";
import { creditsChargedSince } from "../../store/ledger.js";
import { IdempotencyStore } from "./IdempotencyStore.js";
import { RPC_CREDIT_SKU, RpcProxy } from "./RpcProxy.js";
import { IdempotencyKey, JsonRpcBody, type JsonRpcResponseItem, type RpcNetworksResponse } from "./schema.js";

export type RpcRouterDeps = Pick<AppDeps, "config" | "db" | "now" | "credits" | "limits" | "authenticate" | "jsonBody">;

export function rpcRouter(deps: RpcRouterDeps): Router {
  const config = deps.config.wallet.rpc;
  const proxy = new RpcProxy(config);
  const idempotency = new IdempotencyStore(deps.db, config.idempotencyTtlHours * 3_600_000, deps.now);
  const router = Router();

  router.get("/crypto/rpc/networks", (_req, res) => {
    const body: RpcNetworksResponse = { networks: proxy.list() };
    res.json(body);
  });

  router.post("/crypto/rpc/:network", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/crypto/rpc", now: deps.now }, async (paid) => {
      const { ctx } = paid;
      const auth = ctx.auth!;
      const network = proxy.network(String(req.params.network));
      requireJson(req);
      const body = parse(JsonRpcBody, req.body);
      const calls = Array.isArray(body) ? body : [body];
      const tiers = proxy.tiers(network, calls);
      // The proxy's own convention (a 32-character id), unless the client sent an X-Request-Id of its own.
      if (ctx.clientRequestId === ctx.requestId) res.setHeader("X-Request-ID", ctx.requestId.replaceAll("-", ""));

      const keyHeader = req.get("idempotency-key");
      const key = keyHeader === undefined ? undefined : parse(IdempotencyKey, keyHeader);
      if (key) {
        const bodyHash = createHash("sha256").update(JSON.stringify(req.body)).digest("hex");
        const stored = idempotency.claim(auth.accountId, key, network.slug, bodyHash);
        if (stored) {
          res.set({ ...stored.headers, "Idempotent-Replayed": "true" }).json(stored.body);
          return;
        }
      }

      // Recorded from here, refusals by the call and credit limits included.
      paid.record(network.slug);
      const meter = paid.meterFor(`crypto-rpc/${network.slug}`);
      try {
        res.set(deps.limits.admitCalls(ctx, "the crypto RPC proxy", config.requestsPerMinute));
        const maxCredits = proxy.maxCredits(network, tiers);
        const usedToday = rpcCreditsSince(deps, auth.accountId, deps.now() - DAY_MS);
        if (usedToday + maxCredits > config.creditsPerDay) {
          throw new RateLimitError(`Rate limit exceeded: the crypto RPC proxy allows ${config.creditsPerDay} credits per rolling 24 hours (${usedToday} used)`);
        }
        meter.reserve([proxy.costLine(maxCredits)]);
        const items = await proxy.forward(network, calls, paid.signal);
        const credits = proxy.credits(network, tiers, items);
        meter.settle(credits > 0 ? [proxy.costLine(credits)] : []);
        const answered: JsonRpcResponseItem[] = items.map(
          (item, i) => item ?? { jsonrpc: "2.0", id: calls[i]!.id ?? null, error: { code: -32603, message: "the upstream node returned no answer for this call" } },
        );
        const responseBody = Array.isArray(body) ? answered : answered[0];
        const headers = { "x-service-rpc-credits": String(credits), "x-service-rpc-cost-usd": proxy.costUsd(credits) };
        if (key) idempotency.complete(auth.accountId, key, { body: responseBody, headers });
        res.set(headers).json(responseBody);
      } catch (error) {
        // A failed call may be retried under the same key.
        if (key) idempotency.release(auth.accountId, key);
        throw error;
      }
    }),
  );

  return router;
}

/** Credits an account was charged on the proxy since `since` (one count per request). */
function rpcCreditsSince(deps: Pick<AppDeps, "db">, accountId: string, since: number): number {
  return creditsChargedSince(deps.db, accountId, RPC_CREDIT_SKU, since);
}
