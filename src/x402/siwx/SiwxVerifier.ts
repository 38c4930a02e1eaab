import { base58, base64 } from "@scure/base";
import type { WalletFamily } from "../../store/wallets.js";
import { decodeJsonHeader } from "../encoding.js";
import { chainIdFromMessage, checksumAddress, familyOf, isEvmAddress, messageChainId, normalizeAddress, normalizeSiwxChainId } from "../networks.js";
import type { PublicOrigins } from "../PublicOrigins.js";
import type { NonceStore } from "./NonceStore.js";
import { loadEd25519, loadViem } from "../walletLibraries.js";
import { formatSiwxMessage, parseSiwxMessage, SiwxMessageError, type SiwxMessage } from "./SiwxMessage.js";

/** Why a sign-in was refused (reported to the client, which signed it and may know better). */
export type SiwxFailure =
  | "malformed_header"
  | "malformed_message"
  | "unsupported_signature_type"
  | "unsupported_chain"
  | "chain_mismatch"
  | "address_mismatch"
  | "domain_mismatch"
  | "uri_mismatch"
  | "unsupported_version"
  | "invalid_nonce"
  | "not_yet_valid"
  | "expired"
  | "invalid_signature"
  | "nonce_reused";

export class SiwxError extends Error {
  override name = "SiwxError";
  constructor(
    readonly reason: SiwxFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifiedSignIn {
  family: WalletFamily;
  /** Normalised (EVM lower-case hex, Solana base58). */
  address: string;
  /** CAIP-2. */
  chainId: string;
  nonce: string;
  domain: string;
  issuedAt: number;
}

export interface SiwxVerifierOptions {
  origins: PublicOrigins;
  /** CAIP-2 chains a sign-in may name. */
  chains: readonly string[];
  maxAgeMs: number;
  skewMs: number;
  now: () => number;
  nonces: NonceStore;
}

const MAX_HEADER_BYTES = 8 * 1024;
const NONCE = /^[A-Za-z0-9]{8,128}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * Verifies a SIGN-IN-WITH-X header offline. Two payload flavours are accepted:
 * the provider's `{address, message, signature, timestamp?, chainId?, type?}` (the signed text
 * travels whole) and the x402 extension's structured fields `{domain, address, uri, version,
 * chainId, type, nonce, issuedAt, ..., signature}` (the text is rebuilt, then treated the same).
 * Every checked field is read from the signed text; sibling JSON fields must agree with it.
 */
export class SiwxVerifier {
  constructor(private readonly options: SiwxVerifierOptions) {}

  async verify(header: string): Promise<VerifiedSignIn> {
    const payload = decodeJsonHeader(header, MAX_HEADER_BYTES);
    if (!payload) throw new SiwxError("malformed_header", "the header is not base64 of a JSON object");
    const text = typeof payload.message === "string" ? payload.message : rebuildMessage(payload);
    let message: SiwxMessage;
    try {
      message = parseSiwxMessage(text);
    } catch (error) {
      if (error instanceof SiwxMessageError) throw new SiwxError("malformed_message", `the signed message is not a sign-in message: ${error.message}`);
      throw error;
    }
    const family = message.family;

    const type = payload.type ?? payload.signatureType;
    const wantedType = family === "evm" ? ["eip191", "personal_sign", undefined] : ["ed25519", undefined];
    if (!wantedType.includes(type as string | undefined)) {
      throw new SiwxError(
        "unsupported_signature_type",
        type === "eip1271" || type === "eip6492"
          ? "smart-contract wallet signatures (EIP-1271/6492) cannot be verified offline; sign with an externally owned account"
          : `signature type ${JSON.stringify(type)} does not fit a ${family === "evm" ? "Ethereum (eip191)" : "Solana (ed25519)"} sign-in`,
      );
    }

    const chainId = chainIdFromMessage(family, message.chainId);
    if (!chainId) throw new SiwxError("unsupported_chain", `Chain ID "${message.chainId}" is not a ${family === "evm" ? "numeric EVM chain id" : "Solana cluster"}`);
    if (payload.chainId !== undefined && normalizeSiwxChainId(payload.chainId) !== chainId) {
      throw new SiwxError("chain_mismatch", `chainId ${JSON.stringify(payload.chainId)} does not match the signed Chain ID (${chainId})`);
    }
    if (!this.options.chains.includes(chainId)) {
      throw new SiwxError("unsupported_chain", `sign-ins for ${chainId} are not accepted here; use one of ${this.options.chains.join(", ")}`);
    }

    const address = normalizeAddress(family, message.address);
    if (!address || (family === "evm" && !isEvmAddress(message.address, { strict: true }))) throw new SiwxError("malformed_message", "the signed address is not a valid address");
    if (normalizeAddress(family, payload.address) !== address) throw new SiwxError("address_mismatch", "address does not match the signed address");

    if (message.version !== "1") throw new SiwxError("unsupported_version", "Version must be 1");
    const origin = this.options.origins.match(message.domain);
    if (!origin) {
      const known = this.options.origins.list().map((o) => o.domain);
      throw new SiwxError("domain_mismatch", `the sign-in is for ${message.domain}, not this node (${known.join(", ")})`);
    }
    if (message.scheme && `${message.scheme.toLowerCase()}:` !== new URL(origin.origin).protocol) throw new SiwxError("uri_mismatch", "the scheme does not match this node");
    let uriOrigin: string | undefined;
    try {
      uriOrigin = new URL(message.uri).origin;
    } catch {
      uriOrigin = undefined;
    }
    if (uriOrigin !== origin.origin) throw new SiwxError("uri_mismatch", `URI must be on ${origin.origin}`);
    if (!NONCE.test(message.nonce)) throw new SiwxError("invalid_nonce", "Nonce must be 8 to 128 letters and digits");

    const now = this.options.now();
    const { maxAgeMs, skewMs } = this.options;
    const issuedAt = parseTime(message.issuedAt, "Issued At");
    if (issuedAt > now + skewMs) throw new SiwxError("not_yet_valid", "Issued At is in the future");
    if (now - issuedAt > maxAgeMs) throw new SiwxError("expired", `the sign-in was issued more than ${maxAgeMs / 1000} s ago; sign a fresh one`);
    if (message.expirationTime !== undefined && parseTime(message.expirationTime, "Expiration Time") <= now) throw new SiwxError("expired", "the sign-in has expired");
    if (message.notBefore !== undefined && parseTime(message.notBefore, "Not Before") > now + skewMs)
      throw new SiwxError("not_yet_valid", "the sign-in is not valid yet (Not Before)");

    const valid = family === "evm" ? await verifyEvm(text, payload.signature, address) : await verifySolana(text, payload.signature, message.address);
    if (!valid) throw new SiwxError("invalid_signature", "the signature does not match the message and address");

    // Only now, with the signature proven, may the nonce be spent.
    if (!this.options.nonces.consume(`${family}:${address}:${message.nonce}`, issuedAt + maxAgeMs + skewMs)) {
      throw new SiwxError("nonce_reused", "this sign-in's nonce was already used; sign a fresh message for every request");
    }
    return { family, address, chainId, nonce: message.nonce, domain: origin.domain, issuedAt };
  }
}

function parseTime(value: string, name: string): number {
  const time = ISO_TIME.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(time)) throw new SiwxError("malformed_message", `${name} is not an ISO 8601 time`);
  return time;
}

/** The x402 extension's structured proof -> the text its client signed. */
function rebuildMessage(p: Record<string, unknown>): string {
  const str = (key: string) => (typeof p[key] === "string" ? (p[key] as string) : undefined);
  const chainId = normalizeSiwxChainId(p.chainId);
  const family = chainId ? familyOf(chainId) : undefined;
  const [domain, address, uri, version, nonce, issuedAt] = [str("domain"), str("address"), str("uri"), str("version"), str("nonce"), str("issuedAt")];
  if (!chainId || !family || !domain || !address || !uri || !version || !nonce || !issuedAt) {
    throw new SiwxError("malformed_header", "expected either message+signature or the structured fields domain, address, uri, version, chainId, nonce, issuedAt, signature");
  }
  let displayed = address;
  if (family === "evm") {
    if (!isEvmAddress(address)) throw new SiwxError("malformed_message", "the address is not a valid EVM address");
    displayed = checksumAddress(address);
  }
  const resources = Array.isArray(p.resources) && p.resources.every((r) => typeof r === "string") ? (p.resources as string[]) : undefined;
  return formatSiwxMessage({
    domain,
    family,
    address: displayed,
    statement: str("statement"),
    uri,
    version,
    chainId: messageChainId(chainId),
    nonce,
    issuedAt,
    expirationTime: str("expirationTime"),
    notBefore: str("notBefore"),
    requestId: str("requestId"),
    resources,
  });
}

async function verifyEvm(message: string, signature: unknown, address: string): Promise<boolean> {
  // 65 bytes r||s||v: an externally owned account. Contract wallets need an RPC call (not offline).
  if (typeof signature !== "string" || !/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
  try {
    const { recoverMessageAddress } = await loadViem();
    const signer = await recoverMessageAddress({ message, signature: signature as `0x${string}` });
    return signer.toLowerCase() === address;
  } catch {
    return false;
  }
}

async function verifySolana(message: string, signature: unknown, address: string): Promise<boolean> {
  if (typeof signature !== "string") return false;
  const bytes = decodeSignature(signature);
  if (!bytes) return false;
  const ed25519 = await loadEd25519();
  try {
    const publicKey = base58.decode(address);
    if (publicKey.length !== 32 || ed25519.Point.fromBytes(publicKey).isSmallOrder()) return false;
    return ed25519.verify(bytes, new TextEncoder().encode(message), publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** Solana signatures arrive as base58 or base64; either must decode to exactly 64 bytes. */
function decodeSignature(signature: string): Uint8Array | undefined {
  for (const codec of [base58, base64]) {
    try {
      const bytes = codec.decode(signature);
      if (bytes.length === 64) return bytes;
    } catch {
      // try the next encoding
    }
  }
  return undefined;
}
