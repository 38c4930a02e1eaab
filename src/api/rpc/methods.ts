import type { RpcFamily } from "../../config/walletConfig.js";

/**
 * The JSON-RPC methods the proxy forwards, with their pricing tier (1x standard, 2x advanced,
 * 4x large), and the reasons it refuses the rest. Anything not listed is refused: the proxy is
 * an allow-list, so a node method added upstream is not exposed (or billed) by accident.
 */
export type Tier = 1 | 2 | 4;
export type MethodVerdict = { ok: true; tier: Tier } | { ok: false; reason: string };

const EVM_STANDARD = new Set([
  "eth_blockNumber",
  "eth_call",
  "eth_chainId",
  "eth_estimateGas",
  "eth_feeHistory",
  "eth_gasPrice",
  "eth_maxPriorityFeePerGas",
  "eth_blobBaseFee",
  "eth_getBalance",
  "eth_getBlockByHash",
  "eth_getBlockByNumber",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByHash",
  "eth_getBlockTransactionCountByNumber",
  "eth_getCode",
  "eth_getLogs",
  "eth_getProof",
  "eth_getStorageAt",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionByHash",
  "eth_getTransactionCount",
  "eth_getTransactionReceipt",
  "eth_getUncleByBlockHashAndIndex",
  "eth_getUncleByBlockNumberAndIndex",
  "eth_getUncleCountByBlockHash",
  "eth_getUncleCountByBlockNumber",
  "eth_createAccessList",
  "eth_sendRawTransaction",
  "eth_simulateV1",
  "eth_syncing",
  "eth_protocolVersion",
  "net_version",
  "net_listening",
  "net_peerCount",
  "web3_clientVersion",
  "web3_sha3",
  // ERC-4337 bundler methods
  "eth_sendUserOperation",
  "eth_estimateUserOperationGas",
  "eth_getUserOperationByHash",
  "eth_getUserOperationReceipt",
  "eth_supportedEntryPoints",
]);

/** Chain-family extensions, allowed on the chains that have them (by slug prefix). */
const EVM_EXTENSIONS: { prefix: string; slug: RegExp }[] = [
  { prefix: "zks_", slug: /^zksync-/ },
  { prefix: "linea_", slug: /^linea-/ },
  { prefix: "bor_", slug: /^polygon-/ },
];

const EVM_LARGE = new Set(["trace_replayBlockTransactions", "trace_replayTransaction", "txpool_content"]);
const EVM_ADVANCED = new Set(["txpool_inspect", "txpool_status"]);

const FILTERS = new Set(["eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter", "eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"]);
const KEY_HOLDING = new Set([
  "eth_sign",
  "eth_signTransaction",
  "eth_signTypedData",
  "eth_signTypedData_v3",
  "eth_signTypedData_v4",
  "eth_sendTransaction",
  "eth_accounts",
  "eth_coinbase",
  "eth_mining",
  "eth_hashrate",
  "eth_getWork",
  "eth_submitWork",
  "eth_submitHashrate",
]);

const SOLANA_STANDARD = new Set([
  "getAccountInfo",
  "getBalance",
  "getBlock",
  "getBlockCommitment",
  "getBlockHeight",
  "getBlockProduction",
  "getBlocks",
  "getBlocksWithLimit",
  "getBlockTime",
  "getClusterNodes",
  "getEpochInfo",
  "getEpochSchedule",
  "getFeeForMessage",
  "getFirstAvailableBlock",
  "getGenesisHash",
  "getHealth",
  "getHighestSnapshotSlot",
  "getIdentity",
  "getInflationGovernor",
  "getInflationRate",
  "getInflationReward",
  "getLatestBlockhash",
  "getLeaderSchedule",
  "getMaxRetransmitSlot",
  "getMaxShredInsertSlot",
  "getMinimumBalanceForRentExemption",
  "getMultipleAccounts",
  "getProgramAccounts",
  "getRecentPerformanceSamples",
  "getRecentPrioritizationFees",
  "getSignaturesForAddress",
  "getSignatureStatuses",
  "getSlot",
  "getSlotLeader",
  "getSlotLeaders",
  "getStakeMinimumDelegation",
  "getTokenAccountBalance",
  "getTokenAccountsByDelegate",
  "getTokenAccountsByOwner",
  "getTokenLargestAccounts",
  "getTokenSupply",
  "getTransaction",
  "getTransactionCount",
  "getVersion",
  "getVoteAccounts",
  "isBlockhashValid",
  "minimumLedgerSlot",
  "sendTransaction",
  "simulateTransaction",
]);
const SOLANA_LARGE = new Set(["getLargestAccounts", "getSupply"]);

const isSolanaName = (method: string) => SOLANA_STANDARD.has(method) || SOLANA_LARGE.has(method) || /^[a-z]+[A-Z]\w*(Subscribe|Unsubscribe)$/.test(method);
const isEvmName = (method: string) => /^(eth|net|web3|trace|debug|txpool|arbtrace|zks|linea|bor|personal|admin|miner)_/.test(method);

export function familyOfSlug(slug: string): RpcFamily {
  if (slug.startsWith("solana-")) return "solana";
  if (slug.startsWith("starknet-")) return "starknet";
  return "evm";
}

/** The reference's base credits per standard call: 30 for zkSync Era and Solana, 20 for the rest. */
export function defaultBaseCredits(slug: string, family: RpcFamily): number {
  return family === "solana" || slug.startsWith("zksync-") ? 30 : 20;
}

export function classifyMethod(family: RpcFamily, slug: string, method: string): MethodVerdict {
  if (method === "eth_subscribe" || method === "eth_unsubscribe" || /(Subscribe|Unsubscribe)$/.test(method)) {
    return { ok: false, reason: "WebSocket-only method; this proxy is HTTP-only" };
  }
  if (FILTERS.has(method)) return { ok: false, reason: "stateful filter methods are not supported behind a proxy; use eth_getLogs" };
  if (KEY_HOLDING.has(method) || /^(personal|admin|miner)_/.test(method)) return { ok: false, reason: "methods that need keys held by the node are not supported" };

  if (family === "solana") {
    if (SOLANA_LARGE.has(method)) return { ok: true, tier: 4 };
    if (SOLANA_STANDARD.has(method)) return { ok: true, tier: 1 };
    return { ok: false, reason: isEvmName(method) || method.startsWith("starknet_") ? `not a Solana method (${slug} is a Solana network)` : "method not supported" };
  }
  if (family === "starknet") {
    if (method.startsWith("starknet_")) return { ok: true, tier: 1 };
    return { ok: false, reason: isEvmName(method) || isSolanaName(method) ? `not a Starknet method (${slug} is a Starknet network)` : "method not supported" };
  }
  if (EVM_LARGE.has(method) || method.startsWith("arbtrace_replay"))
    return method.startsWith("arbtrace_") && !slug.startsWith("arbitrum-") ? onlyOn("arbitrum") : { ok: true, tier: 4 };
  if (EVM_ADVANCED.has(method) || method.startsWith("trace_") || method.startsWith("debug_")) return { ok: true, tier: 2 };
  if (method.startsWith("arbtrace_")) return slug.startsWith("arbitrum-") ? { ok: true, tier: 2 } : onlyOn("arbitrum");
  if (EVM_STANDARD.has(method)) return { ok: true, tier: 1 };
  for (const extension of EVM_EXTENSIONS) {
    if (method.startsWith(extension.prefix))
      return extension.slug.test(slug) ? { ok: true, tier: 1 } : { ok: false, reason: `${extension.prefix}* methods belong to another chain` };
  }
  if (method.startsWith("starknet_") || isSolanaName(method)) return { ok: false, reason: `not an EVM method (${slug} is an EVM network)` };
  return { ok: false, reason: "method not supported" };
}

function onlyOn(chain: string): MethodVerdict {
  return { ok: false, reason: `only available on ${chain} networks` };
}
