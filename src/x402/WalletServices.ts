import type { Credits } from "../billing/credits.js";
import type { ServerConfig } from "../config/serverSettings.js";
import type { Logger } from "../logger.js";
import type { Db } from "../store/Store.js";
import { PaymentRequirements } from "./PaymentRequirements.js";
import { PublicOrigins } from "./PublicOrigins.js";
import { NonceStore } from "./siwx/NonceStore.js";
import { SiwxVerifier } from "./siwx/SiwxVerifier.js";
import { TopUps } from "./TopUps.js";

/** Everything wallet payments need, built once per server from the configuration. */
export interface WalletServices {
  origins: PublicOrigins;
  nonces: NonceStore;
  siwx: SiwxVerifier;
  requirements: PaymentRequirements;
  topUps: TopUps;
}

export function createWalletServices(deps: { db: Db; config: ServerConfig; credits: Credits; logger: Logger; now: () => number }): WalletServices {
  const x402 = deps.config.wallet.x402;
  const origins = new PublicOrigins(deps.config.publicUrl);
  const nonces = new NonceStore(deps.db, deps.now);
  const requirements = new PaymentRequirements(x402, origins, deps.now);
  const siwx = new SiwxVerifier({
    origins,
    chains: requirements.siwxChains().map((c) => c.chainId),
    maxAgeMs: x402.siwx.maxAgeSeconds * 1000,
    skewMs: x402.siwx.clockSkewSeconds * 1000,
    now: deps.now,
    nonces,
  });
  const topUps = new TopUps(deps.db, x402, deps.credits, deps.logger, deps.now);
  if (x402.settlement === "off") deps.logger.warn("x402 settlement is OFF: top-ups are credited on a signature alone, without moving any funds. Development only.");
  return { origins, nonces, siwx, requirements, topUps };
}
