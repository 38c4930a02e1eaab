import { keccak_256 } from "@noble/hashes/sha3.js";
import { base58 } from "@scure/base";
import type { WalletFamily } from "../store/wallets.js";

/**
 * CAIP-2 network ids and wallet addresses: the spellings clients send, mapped to one form.
 */

/** Solana cluster genesis-hash prefixes (CAIP-2 references) and the names wallets use for them. */
const SOLANA_CLUSTERS: Record<string, string> = {
  mainnet: "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "mainnet-beta": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  devnet: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  testnet: "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
};

/** x402 v1 network names (still sent by legacy clients) -> CAIP-2. */
const V1_NETWORKS: Record<string, string> = {
  base: "eip155:8453",
  "base-sepolia": "eip155:84532",
  ethereum: "eip155:1",
  polygon: "eip155:137",
  solana: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "solana-devnet": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
};

export function familyOf(caip2: string): WalletFamily | undefined {
  if (/^eip155:[1-9][0-9]*$/.test(caip2)) return "evm";
  if (/^solana:[1-9A-HJ-NP-Za-km-z]{32}$/.test(caip2)) return "solana";
  return undefined;
}

/** A network as a payment payload names it (CAIP-2 or a v1 name) -> CAIP-2, or undefined. */
export function normalizeNetwork(network: unknown): string | undefined {
  if (typeof network !== "string") return undefined;
  if (familyOf(network)) return network;
  return V1_NETWORKS[network];
}

/**
 * A sign-in payload's chainId (8453, "8453", "eip155:8453", "solana:<ref>") -> CAIP-2.
 * Bare numbers are EVM chain ids.
 */
export function normalizeSiwxChainId(chainId: unknown): string | undefined {
  if (typeof chainId === "number" && Number.isSafeInteger(chainId) && chainId > 0) return `eip155:${chainId}`;
  if (typeof chainId !== "string") return undefined;
  if (/^[1-9][0-9]{0,15}$/.test(chainId)) return `eip155:${chainId}`;
  return familyOf(chainId) ? chainId : undefined;
}

/** The "Chain ID:" line of a signed message -> CAIP-2 (EVM: decimal id; Solana: reference or cluster name). */
export function chainIdFromMessage(family: WalletFamily, value: string): string | undefined {
  if (family === "evm") return /^[1-9][0-9]{0,15}$/.test(value) ? `eip155:${value}` : undefined;
  if (familyOf(value) === "solana") return value;
  const reference = SOLANA_CLUSTERS[value] ?? (/^[1-9A-HJ-NP-Za-km-z]{32}$/.test(value) ? value : undefined);
  return reference ? `solana:${reference}` : undefined;
}

/** What goes on the "Chain ID:" line for a CAIP-2 network. */
export function messageChainId(caip2: string): string {
  return caip2.slice(caip2.indexOf(":") + 1);
}

/**
 * The one form a wallet is known by in the ledger and in paths: EVM 0x + lower-case hex,
 * Solana base58 as is (it is case-sensitive). Undefined when it is not a valid address.
 */
export function normalizeAddress(family: WalletFamily, address: unknown): string | undefined {
  if (typeof address !== "string") return undefined;
  if (family === "evm") return isEvmAddress(address) ? address.toLowerCase() : undefined;
  return isSolanaAddress(address) ? address : undefined;
}

export function isSolanaAddress(address: string): boolean {
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(address)) return false;
  try {
    return base58.decode(address).length === 32;
  } catch {
    return false;
  }
}

/** A wallet address in a path: EVM or Solana, normalised; undefined when it is neither. */
export function normalizeAnyAddress(address: string): { family: WalletFamily; address: string } | undefined {
  if (isEvmAddress(address)) return { family: "evm", address: address.toLowerCase() };
  const solana = normalizeAddress("solana", address);
  return solana ? { family: "solana", address: solana } : undefined;
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * An EVM address: 0x and 40 hex digits. `strict` also holds a mixed-case address to its EIP-55
 * checksum (all lower case carries none and passes), as wallets and viem's isAddress do.
 */
export function isEvmAddress(address: string, options: { strict?: boolean } = {}): boolean {
  if (!EVM_ADDRESS.test(address)) return false;
  if (!options.strict || address.toLowerCase() === address) return true;
  return checksumAddress(address) === address;
}

/**
 * The EIP-55 spelling of an EVM address: each hex letter upper case where the keccak-256 of the
 * lower-case hex has a nibble of 8 or more. Computed here rather than with viem, which a node
 * without wallet payments never loads (see loadOnFirstUse).
 */
export function checksumAddress(address: string): string {
  if (!EVM_ADDRESS.test(address)) throw new Error(`not an EVM address: ${address}`);
  const hex = address.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(hex));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    out += nibble >= 8 ? hex[i]!.toUpperCase() : hex[i]!;
  }
  return out;
}
