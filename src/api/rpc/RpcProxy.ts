import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import type { CostLine } from "../../billing/money.js";
import { ApiError, InvalidRequestError } from "../../errors.js";
import type { CryptoRpcConfig, RpcFamily } from "../../config/walletConfig.js";
import { classifyMethod, defaultBaseCredits, familyOfSlug, type Tier } from "./methods.js";
import type { JsonRpcCall, JsonRpcResponseItem } from "./schema.js";

/** A JSON-RPC error item is billed this many credits instead of its method's tier. */
export const ERROR_ITEM_CREDITS = 5;
export const RPC_CREDIT_SKU = "crypto-rpc-credit";

export interface RpcNetworkInfo {
  slug: string;
  url: string;
  family: RpcFamily;
  baseCredits: number;
}

/** The upstream node failed (unreachable, timed out, too large, not JSON-RPC): 500, nothing charged. */
export class UpstreamRpcError extends ApiError {
  constructor(network: string, what: string) {
    super(500, `The upstream RPC node for ${network} ${what}. Nothing was charged; retry later.`, { code: "UPSTREAM_RPC_ERROR" });
  }
}

/**
 * The crypto RPC proxy's domain: which networks exist (configuration), which methods may pass
 * and what they cost, and the upstream call itself. Calls are forwarded with ids of the
 * proxy's own (so duplicate or missing client ids cannot confuse billing) and answered in the
 * caller's order with the caller's ids. Only a JSON body leaves: no client header is forwarded.
 */
export class RpcProxy {
  private readonly networks: Map<string, RpcNetworkInfo>;

  constructor(private readonly config: CryptoRpcConfig) {
    this.networks = new Map(
      Object.entries(config.networks).map(([slug, n]) => {
        const family = n.family ?? familyOfSlug(slug);
        return [slug, { slug, url: n.url, family, baseCredits: n.baseCredits ?? defaultBaseCredits(slug, family) }];
      }),
    );
  }

  list(): string[] {
    return [...this.networks.keys()].sort();
  }

  network(slug: string): RpcNetworkInfo {
    const network = this.networks.get(slug);
    if (!network) throw InvalidRequestError.forField(["network"], `Unsupported RPC network "${slug}"; GET /crypto/rpc/networks lists the supported ones`);
    return network;
  }

  /** Each call's tier; the whole batch is refused (400, listing them) if any method is not allowed. */
  tiers(network: RpcNetworkInfo, calls: readonly JsonRpcCall[]): Tier[] {
    const refused: { method: string; reason: string }[] = [];
    const tiers = calls.map((call) => {
      const verdict = classifyMethod(network.family, network.slug, call.method);
      if (verdict.ok) return verdict.tier;
      if (!refused.some((r) => r.method === call.method)) refused.push({ method: call.method, reason: verdict.reason });
      return 1;
    });
    if (refused.length > 0) {
      throw new InvalidRequestError(
        `Unsupported JSON-RPC method${refused.length > 1 ? "s" : ""} on ${network.slug}: ${refused.map((r) => `${r.method} (${r.reason})`).join("; ")}`,
        { _errors: [], methods: { _errors: refused.map((r) => `${r.method}: ${r.reason}`) }, unsupportedMethods: refused.map((r) => r.method) },
      );
    }
    return tiers;
  }

  /** The most a batch can cost (every call at its tier; an error item never costs more than that). */
  maxCredits(network: RpcNetworkInfo, tiers: readonly Tier[]): number {
    return tiers.reduce((sum, tier) => sum + Math.max(network.baseCredits * tier, ERROR_ITEM_CREDITS), 0);
  }

  /** What the answered batch costs: each item at its tier, error items at 5 credits, unanswered calls nothing. */
  credits(network: RpcNetworkInfo, tiers: readonly Tier[], items: readonly (JsonRpcResponseItem | undefined)[]): number {
    return items.reduce((sum, item, i) => (item === undefined ? sum : sum + (item.error !== undefined ? ERROR_ITEM_CREDITS : network.baseCredits * tiers[i]!)), 0);
  }

  /** A cost line for `credits` credits, rounded up to the micro-USD (DIEM at the same rate). */
  costLine(credits: number): CostLine {
    const picoPerCredit = Math.round(this.config.pricePerCreditUsd * 1e12);
    const micros = Math.ceil((credits * picoPerCredit) / 1e6);
    return { sku: RPC_CREDIT_SKU, units: credits, pricePerUnitUsd: this.config.pricePerCreditUsd, usdMicros: micros, diemMicros: micros };
  }

  /** The reference's cost header: credits x price, to 8 decimals. */
  costUsd(credits: number): string {
    return ((credits * Math.round(this.config.pricePerCreditUsd * 1e12)) / 1e12).toFixed(8);
  }

  /** Forwards the calls; returns one response item (or undefined when the node gave none) per call, in order. */
  async forward(network: RpcNetworkInfo, calls: readonly JsonRpcCall[], signal: AbortSignal): Promise<(JsonRpcResponseItem | undefined)[]> {
    const outgoing = calls.map((call, i) => ({ jsonrpc: "2.0", id: i, method: call.method, ...(call.params !== undefined ? { params: call.params } : {}) }));
    const timeout = AbortSignal.timeout(this.config.timeoutMs);
    let response: globalThis.Response;
    try {
      response = await fetch(network.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(outgoing.length === 1 ? outgoing[0] : outgoing),
        signal: AbortSignal.any([timeout, signal]),
        redirect: "error",
      });
    } catch (error) {
      throw new UpstreamRpcError(network.slug, timeout.aborted ? `did not answer within ${this.config.timeoutMs} ms` : `is unreachable (${fetchFailureCause(error)})`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new UpstreamRpcError(network.slug, `answered HTTP ${response.status}`);
    }
    const text = await readCapped(response, this.config.maxResponseBytes).catch((error: Error) => {
      throw new UpstreamRpcError(network.slug, timeout.aborted ? `did not answer within ${this.config.timeoutMs} ms` : error.message);
    });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new UpstreamRpcError(network.slug, "answered something that is not JSON");
    }
    const items = Array.isArray(json) ? json : [json];
    if (outgoing.length > 1 && !Array.isArray(json)) throw new UpstreamRpcError(network.slug, "answered a batch with a single object");
    const byId = new Map<number, JsonRpcResponseItem>();
    for (const item of items) {
      if (!isResponseItem(item)) throw new UpstreamRpcError(network.slug, "answered something that is not JSON-RPC 2.0");
      if (typeof item.id === "number") byId.set(item.id, item);
    }
    return calls.map((call, i) => {
      const item = byId.get(i);
      if (!item) return undefined;
      return { ...item, jsonrpc: "2.0", id: call.id ?? null };
    });
  }
}

function isResponseItem(item: unknown): item is JsonRpcResponseItem {
  if (typeof item !== "object" || item === null) return false;
  const o = item as Record<string, unknown>;
  return "result" in o || (typeof o.error === "object" && o.error !== null);
}

async function readCapped(response: globalThis.Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new Error(`answered more than ${maxBytes} bytes`);
  }
  const reader = response.body!.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error(`answered more than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
