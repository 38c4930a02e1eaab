import { loadOnFirstUse } from "../loadOnFirstUse.js";

/**
 * The wallet libraries, loaded with the first sign-in, web3 key or top-up that needs them:
 * together about 45 MB of resident memory that a node nobody pays or signs in to never spends.
 * Address spelling (EIP-55, base58) stays synchronous and light: see networks.ts.
 */
export const loadViem = loadOnFirstUse(() => import("viem"));
export const loadEd25519 = loadOnFirstUse(async () => (await import("@noble/curves/ed25519.js")).ed25519);
