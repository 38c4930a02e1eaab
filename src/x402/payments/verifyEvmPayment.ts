import { createHash } from "node:crypto";
import { recoverTypedDataAddress } from "viem";
import { z } from "zod";
import { X402Error } from "../../errors.js";
import type { EvmRail } from "../../config/walletConfig.js";
import type { Eip3009Authorization, PaymentLimits, VerifiedPayment } from "./types.js";

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** Authorization deadlines must leave a facilitator this long to land the transfer. */
const VALID_BEFORE_BUFFER_S = 6n;
/** Slack on maxTimeoutSeconds for clients whose clocks run a little ahead. */
const WINDOW_SLACK_S = 60n;

const Uint = z.string().regex(/^[0-9]{1,78}$/, "a decimal integer string");
const EvmExactPayload = z.object({
  signature: z.string(),
  authorization: z.object({
    from: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    to: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    value: Uint,
    validAfter: Uint,
    validBefore: Uint,
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  }),
});

const invalid = (reason: string, message: string) => new X402Error(400, "X402_INVALID_PAYMENT", message, reason);

/**
 * Verifies an x402 "exact" EVM payload offline: an EIP-3009 TransferWithAuthorization of the
 * configured USDC to the configured pay-to, for at least the minimum, inside its time window,
 * signed (EIP-712) by `from` over the domain built from server configuration only.
 * Contract-wallet signatures (not 65 bytes) cannot be checked offline and are refused.
 */
export async function verifyEvmPayment(payload: unknown, rail: EvmRail, limits: PaymentLimits, nowMs: number): Promise<VerifiedPayment> {
  const parsed = EvmExactPayload.safeParse(payload);
  if (!parsed.success)
    throw invalid("invalid_payload", "Invalid payment header: payload must be { signature, authorization: { from, to, value, validAfter, validBefore, nonce } }");
  const { signature, authorization: a } = parsed.data;
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) {
    throw invalid(
      "invalid_exact_evm_signature",
      "Invalid payment header: the signature must be a 65-byte EOA signature (smart-contract wallet signatures cannot be verified here)",
    );
  }
  if (a.to.toLowerCase() !== rail.payTo.toLowerCase()) throw invalid("invalid_exact_evm_recipient_mismatch", `Invalid payment header: the transfer must go to ${rail.payTo}`);
  const authorization: Eip3009Authorization = {
    from: a.from as `0x${string}`,
    to: a.to as `0x${string}`,
    value: BigInt(a.value),
    validAfter: BigInt(a.validAfter),
    validBefore: BigInt(a.validBefore),
    nonce: a.nonce as `0x${string}`,
  };
  if (authorization.value < BigInt(limits.minMicros)) {
    throw invalid("invalid_exact_evm_authorization_value", `Invalid payment header: the minimum top-up is ${limits.minMicros / 1e6} USD`);
  }
  if (authorization.value > BigInt(limits.maxMicros)) {
    throw invalid("invalid_exact_evm_authorization_value", `Invalid payment header: the maximum top-up is ${limits.maxMicros / 1e6} USD`);
  }
  const now = BigInt(Math.floor(nowMs / 1000));
  if (authorization.validAfter > now)
    throw invalid("invalid_exact_evm_payload_authorization_valid_after", "Invalid payment header: the authorization is not valid yet (validAfter)");
  if (authorization.validBefore < now + VALID_BEFORE_BUFFER_S)
    throw invalid("invalid_exact_evm_payload_authorization_valid_before", "Invalid payment header: the authorization has expired (validBefore)");
  if (authorization.validBefore - now > BigInt(limits.maxTimeoutSeconds) + WINDOW_SLACK_S) {
    throw invalid("invalid_exact_evm_payload_authorization_valid_before", `Invalid payment header: validBefore may be at most ${limits.maxTimeoutSeconds} s ahead`);
  }

  const chainId = Number(rail.network.slice("eip155:".length));
  let signer: string;
  try {
    signer = await recoverTypedDataAddress({
      domain: { name: rail.eip712.name, version: rail.eip712.version, chainId, verifyingContract: rail.asset as `0x${string}` },
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message: authorization,
      signature: signature as `0x${string}`,
    });
  } catch {
    throw invalid("invalid_exact_evm_signature", "Invalid payment header: the signature does not verify");
  }
  if (signer.toLowerCase() !== authorization.from.toLowerCase()) {
    throw invalid("invalid_exact_evm_signature", "Invalid payment header: the authorization is not signed by its from address (wrong token, chain or fields)");
  }

  const payer = authorization.from.toLowerCase();
  return {
    network: rail.network,
    family: "evm",
    asset: rail.asset.toLowerCase(),
    payTo: rail.payTo.toLowerCase(),
    payer,
    amountMicros: Number(authorization.value),
    idempotencyKey: `${rail.network}:${rail.asset.toLowerCase()}:${payer}:${authorization.nonce.toLowerCase()}`,
    payloadHash: createHash("sha256")
      .update(JSON.stringify({ ...a, signature: signature.toLowerCase() }))
      .digest("hex"),
    validBefore: Number(authorization.validBefore) * 1000,
    settle: { kind: "evm", authorization, signature: signature as `0x${string}` },
  };
}
