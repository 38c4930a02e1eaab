import { BaseError, ContractFunctionRevertedError, createPublicClient, createWalletClient, defineChain, http, parseEventLogs, parseSignature, type Hex } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import type { EvmRail } from "../../config/walletConfig.js";
import type { Eip3009Authorization } from "../payments/types.js";
import { SettlementError } from "./SettlementError.js";

/** The slice of a FiatToken (USDC) contract settlement uses. */
export const EIP3009_ABI = [
  {
    type: "function",
    name: "transferWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" },
      { name: "r", type: "bytes32" },
      { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
    ],
    outputs: [{ type: "bool" }],
  },
  {
    type: "event",
    name: "Transfer",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  },
] as const;

export type ReceiptState = { state: "pending" } | { state: "confirmed"; blockNumber: bigint } | { state: "failed"; reason: string };

/**
 * Settles EIP-3009 authorizations on an EVM chain through the configured JSON-RPC node: the
 * node's settler account calls the token's transferWithAuthorization and pays the gas. A
 * transfer counts as paid only when its receipt succeeded, has the configured number of
 * confirmations, and carries the Transfer event (from, payTo, value) of that token.
 */
function clientsFor(rail: EvmRail) {
  if (!rail.rpcUrl || !rail.settlerPrivateKey) throw new Error("EVM settlement needs base.rpcUrl and a settler key");
  const chain = defineChain({
    id: Number(rail.network.slice("eip155:".length)),
    name: rail.network,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rail.rpcUrl] } },
  });
  const transport = http(rail.rpcUrl, { timeout: 15_000, retryCount: 0 });
  const account = privateKeyToAccount(rail.settlerPrivateKey as Hex);
  return {
    chain,
    account,
    publicClient: createPublicClient({ chain, transport, pollingInterval: 250 }),
    walletClient: createWalletClient({ account, chain, transport }),
  };
}

export class EvmSettler {
  private readonly publicClient: ReturnType<typeof clientsFor>["publicClient"];
  private readonly walletClient: ReturnType<typeof clientsFor>["walletClient"];
  private readonly account: PrivateKeyAccount;
  private readonly chain: ReturnType<typeof defineChain>;
  /** Submissions are serialised so the settler's transaction nonces never collide. */
  private queue: Promise<unknown> = Promise.resolve();
  private nextNonce: number | undefined;

  constructor(private readonly rail: EvmRail) {
    const clients = clientsFor(rail);
    this.chain = clients.chain;
    this.account = clients.account;
    this.publicClient = clients.publicClient;
    this.walletClient = clients.walletClient;
  }

  get settlerAddress(): string {
    return this.account.address;
  }

  /**
   * Runs the transfer as a call against the latest block: it proves the payer has the funds,
   * the signature is the token's and the nonce is unused, without spending gas. A revert is
   * `transfer_simulation_failed`; a node that cannot be reached is `settlement_node_unavailable`.
   */
  async simulate(authorization: Eip3009Authorization, signature: Hex): Promise<void> {
    try {
      await this.publicClient.simulateContract({
        address: this.rail.asset as Hex,
        abi: EIP3009_ABI,
        functionName: "transferWithAuthorization",
        args: transferArgs(authorization, signature),
        account: this.account,
        blockTag: "latest",
      });
    } catch (error) {
      const reverted = error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionRevertedError) !== null;
      if (reverted) throw new SettlementError("transfer_simulation_failed", `the transfer would fail: ${revertReason(error)}`);
      throw new SettlementError("settlement_node_unavailable", `the chain node could not check the transfer: ${revertReason(error)}`);
    }
  }

  /** Simulates the transfer (a revert costs no gas), then sends it. Returns the transaction hash. */
  submit(authorization: Eip3009Authorization, signature: Hex): Promise<Hex> {
    const run = async (): Promise<Hex> => {
      await this.simulate(authorization, signature);
      try {
        this.nextNonce ??= await this.publicClient.getTransactionCount({ address: this.account.address, blockTag: "pending" });
        const hash = await this.walletClient.writeContract({
          address: this.rail.asset as Hex,
          abi: EIP3009_ABI,
          functionName: "transferWithAuthorization",
          args: transferArgs(authorization, signature),
          account: this.account,
          chain: this.chain,
          gas: BigInt(this.rail.gasLimit),
          nonce: this.nextNonce,
        });
        this.nextNonce++;
        return hash;
      } catch (error) {
        this.nextNonce = undefined;
        throw new SettlementError("transfer_submission_failed", `the chain node refused the transfer: ${revertReason(error)}`);
      }
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Waits (up to receiptTimeoutMs) for the transfer to be mined and confirmed, and checks it paid. */
  async confirm(hash: Hex, authorization: Eip3009Authorization): Promise<bigint> {
    let receipt: Awaited<ReturnType<typeof this.publicClient.waitForTransactionReceipt>>;
    try {
      receipt = await this.publicClient.waitForTransactionReceipt({
        hash,
        confirmations: this.rail.confirmations,
        timeout: this.rail.receiptTimeoutMs,
        pollingInterval: 250,
      });
    } catch (error) {
      throw new SettlementError("settlement_pending", `the transfer ${hash} is not confirmed yet: ${revertReason(error)}`);
    }
    const state = this.checkReceipt(receipt, authorization);
    if (state.state === "failed") throw new SettlementError("transfer_failed", state.reason);
    return receipt.blockNumber;
  }

  /** Non-blocking: where a submitted transfer stands (for the background worker). */
  async receiptState(hash: Hex, authorization: Eip3009Authorization): Promise<ReceiptState> {
    const receipt = await this.publicClient.getTransactionReceipt({ hash }).catch(() => undefined);
    if (!receipt) return { state: "pending" };
    const head = await this.publicClient.getBlockNumber({ cacheTime: 0 });
    if (head - receipt.blockNumber + 1n < BigInt(this.rail.confirmations)) return { state: "pending" };
    const state = this.checkReceipt(receipt, authorization);
    return state.state === "failed" ? state : { state: "confirmed", blockNumber: receipt.blockNumber };
  }

  /** Whether the token has consumed this authorization (true once a transfer with it was mined). */
  async authorizationUsed(authorization: Eip3009Authorization): Promise<boolean> {
    return this.publicClient.readContract({
      address: this.rail.asset as Hex,
      abi: EIP3009_ABI,
      functionName: "authorizationState",
      args: [authorization.from, authorization.nonce],
    });
  }

  private checkReceipt(
    receipt: { status: "success" | "reverted"; logs: Parameters<typeof parseEventLogs>[0]["logs"] },
    authorization: Eip3009Authorization,
  ): { state: "ok" } | { state: "failed"; reason: string } {
    if (receipt.status !== "success") return { state: "failed", reason: "the transfer reverted on chain" };
    const transfers = parseEventLogs({ abi: EIP3009_ABI, logs: receipt.logs, eventName: "Transfer" });
    const paid = transfers.some(
      (log) =>
        log.address.toLowerCase() === this.rail.asset.toLowerCase() &&
        log.args.from.toLowerCase() === authorization.from.toLowerCase() &&
        log.args.to.toLowerCase() === authorization.to.toLowerCase() &&
        log.args.value === authorization.value,
    );
    return paid ? { state: "ok" } : { state: "failed", reason: "the mined transaction carries no matching Transfer event" };
  }
}

function transferArgs(a: Eip3009Authorization, signature: Hex) {
  const { v, r, s, yParity } = parseSignature(signature);
  return [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v ?? BigInt(yParity + 27)), r, s] as const;
}

function revertReason(error: unknown): string {
  if (error instanceof BaseError) {
    const revert = error.walk((e) => e instanceof ContractFunctionRevertedError);
    if (revert instanceof ContractFunctionRevertedError) return revert.reason ?? revert.shortMessage;
    return error.shortMessage;
  }
  return (error as Error)?.message ?? String(error);
}
