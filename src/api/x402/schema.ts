import { z } from "zod";

/** The reference's wallet path parameter: an EVM or a Solana address. */
export const WalletAddressParam = z.string().regex(/^(0x[a-fA-F0-9]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/, "an EVM (0x...) or Solana (base58) wallet address");

export const TransactionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export interface X402BalanceResponse {
  success: true;
  data: { walletAddress: string; balanceUsd: number; canConsume: boolean; minimumTopUpUsd: number; suggestedTopUpUsd: number };
}

export interface X402Transaction {
  id: string;
  amount: number;
  balanceAfter: number;
  type: string;
  createdAt: string;
  requestId: string | null;
  modelId: string | null;
}

export interface X402TransactionsResponse {
  success: true;
  data: {
    walletAddress: string;
    currentBalance: number;
    transactions: X402Transaction[];
    pagination: { limit: number; offset: number; hasMore: boolean };
  };
}
