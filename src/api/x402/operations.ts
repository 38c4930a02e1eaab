import { ACCOUNT_RATE_LIMIT_HEADERS } from "../billing/operations.js";
import { z } from "zod";
import { defineApiGroup, SIWX_HEADER } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const wallet = z.object({ walletAddress: schemas.WalletAddressParam });

export const x402Api = defineApiGroup({
  tag: "x402",
  description: "Wallet credit: top-ups paid with x402 (USDC), balances and transactions of a signed-in wallet.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/x402/top-up",
      operationId: "topUpX402Balance",
      summary: "Top up a wallet's credit",
      description:
        "Without a PAYMENT-SIGNATURE header: 402 with the payment requirements (also in the PAYMENT-REQUIRED header). With one: verifies and settles the payment and credits the paying wallet.",
      access: "public",
      headers: { "PAYMENT-SIGNATURE": { description: "The x402 payment payload, base64 JSON (X-PAYMENT is accepted too)" } },
      responses: {
        200: { description: "Credited", headers: { "PAYMENT-RESPONSE": "The settlement receipt, base64 JSON" }, content: { "application/json": schemas.X402TopUpResponse } },
        400: {
          description:
            "The payment does not verify (`error` X402_INVALID_PAYMENT), the transfer fails on chain (`error` PAYMENT_VERIFICATION_FAILED), or the same payment is still being settled (`error` X402_SETTLEMENT_IN_PROGRESS); with `message` and `details.reason`",
          content: { "application/json": z.looseObject({ error: z.string() }) },
        },
        402: {
          description:
            "The payment requirements (`accepts` empty when the node's operator has not enabled top-ups). The body has the provider's fields only; x402's whole PaymentRequired (resource, error, message, the sign-in-with-x extension) is in PAYMENT-REQUIRED.",
          headers: { "PAYMENT-REQUIRED": "x402's PaymentRequired, base64 JSON" },
          content: { "application/json": schemas.TopUpPaymentRequired },
        },
      },
      errors: {
        500: "The transfer is not confirmed yet (`error` X402_SETTLEMENT_PENDING; send the same payment again for the result), or the chain node could not be asked (`error` PAYMENT_VERIFICATION_FAILED, `details.reason` settlement_node_unavailable)",
      },
    },
    {
      method: "get",
      path: "/x402/balance/{walletAddress}",
      operationId: "getX402Balance",
      summary: "A signed-in wallet's credit",
      access: "wallet",
      headers: SIWX_HEADER,
      params: wallet,
      responses: { 200: { description: "The balance", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.X402BalanceResponse } } },
      errors: { 400: "The path's wallet is not an EVM or Solana address", 403: "The path's wallet is not the signed-in one (`code` X402_WALLET_MISMATCH)" },
    },
    {
      method: "get",
      path: "/x402/transactions/{walletAddress}",
      operationId: "getX402Transactions",
      summary: "A signed-in wallet's ledger",
      access: "wallet",
      headers: SIWX_HEADER,
      params: wallet,
      query: schemas.TransactionsQuery,
      responses: {
        200: { description: "Top-ups and charges, newest first", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.X402TransactionsResponse } },
      },
      errors: { 400: "The path's wallet is not an EVM or Solana address", 403: "The path's wallet is not the signed-in one (`code` X402_WALLET_MISMATCH)" },
    },
  ],
});
