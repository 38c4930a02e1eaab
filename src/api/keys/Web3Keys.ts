import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Credits } from "../../billing/credits.js";
import type { Web3KeysConfig } from "../../config/walletConfig.js";
import { ApiError, AuthenticationError, InvalidRequestError, PermissionDeniedError } from "../../errors.js";
import { findWallet, ensureWalletAccount } from "../../store/wallets.js";
import type { Db } from "../../store/Store.js";
import { checksumAddress, isEvmAddress } from "../../x402/networks.js";
import type { NonceStore } from "../../x402/siwx/NonceStore.js";
import { loadViem } from "../../x402/walletLibraries.js";
import type { CreateApiKeyRequest, CreateApiKeyResponse } from "./schema.js";

/** What a token carries: a single-use nonce and when it stops being accepted. */
interface TokenPayload {
  nonce: string;
  exp: number;
}

/**
 * API keys for wallets: GET hands out a token (a nonce and an expiry, MACed with a key this
 * process made, so it cannot be forged or altered); the wallet signs the token's text
 * (EIP-191 personal_sign); POST checks the MAC, the expiry and the signature, uses the nonce
 * up (a token works once), applies the operator's policy (web3Keys in the wallet config) and
 * creates the key on the wallet's account. EVM wallets only: the provider's flow is for them.
 */
export class Web3Keys {
  private readonly secret = randomBytes(32);

  constructor(
    private readonly options: {
      db: Db;
      credits: Credits;
      nonces: NonceStore;
      policy: Web3KeysConfig;
      now: () => number;
      createKey: (accountId: string, request: CreateApiKeyRequest) => CreateApiKeyResponse;
    },
  ) {}

  issueToken(): string {
    this.requireEnabled();
    const payload: TokenPayload = { nonce: randomBytes(16).toString("hex"), exp: this.options.now() + this.options.policy.tokenTtlSeconds * 1000 };
    const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
    return `${body}.${this.mac(body)}`;
  }

  async createKey(request: CreateApiKeyRequest & { address: string; signature: string; token: string }): Promise<CreateApiKeyResponse> {
    this.requireEnabled();
    const { address, signature, token, ...keyRequest } = request;
    if (!isEvmAddress(address)) throw InvalidRequestError.forField(["address"], "an EVM address: 0x and 40 hex digits");
    const payload = this.readToken(token);
    const { recoverMessageAddress } = await loadViem();
    let signer: string;
    try {
      signer = await recoverMessageAddress({ message: token, signature: signature as `0x${string}` });
    } catch {
      throw InvalidRequestError.forField(["signature"], "not a signature this node can read: sign the token's text with personal_sign (EIP-191)");
    }
    const wallet = checksumAddress(address);
    if (checksumAddress(signer) !== wallet) throw new AuthenticationError(`The signature is not ${wallet}'s signature of this token`);
    // Only after the signature checked out: nobody can burn another wallet's token with a forged request.
    if (!this.options.nonces.consume(`web3-key:${payload.nonce}`, payload.exp)) throw new AuthenticationError("This token was already used: get a new one");
    if (keyRequest.apiKeyType === "ADMIN" && !this.options.policy.allowAdminKeys) {
      throw new PermissionDeniedError("This node makes INFERENCE keys for wallets; ADMIN keys are off (web3Keys.allowAdminKeys in the wallet config)");
    }
    const accountId = this.admittedAccount(wallet);
    return this.options.createKey(accountId, keyRequest);
  }

  private admittedAccount(wallet: string): string {
    const { policy, db, credits } = this.options;
    const existing = findWallet(db, wallet);
    if (policy.allow === "allowlist" && !policy.allowlist.some((listed) => checksumAddress(listed) === wallet)) {
      throw new PermissionDeniedError(`${wallet} is not on this node's list of wallets that may make API keys`);
    }
    if (policy.allow === "credit") {
      const balance = existing ? credits.snapshot(existing.accountId) : undefined;
      if (!balance || balance.usd + balance.diem + balance.bundled <= 0) {
        throw new PermissionDeniedError(`${wallet} has no credit on this node: top it up (POST /x402/top-up) before making an API key`);
      }
    }
    return existing?.accountId ?? ensureWalletAccount(db, wallet, "evm", this.options.now());
  }

  private readToken(token: string): TokenPayload {
    const [body, mac, extra] = token.split(".");
    const expected = body ? Buffer.from(this.mac(body)) : undefined;
    if (!body || !mac || extra !== undefined || !expected || expected.length !== mac.length || !timingSafeEqual(expected, Buffer.from(mac))) {
      throw new AuthenticationError("The token is not one this node issued (or it was altered): get one from GET /api_keys/generate_web3_key");
    }
    const payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as TokenPayload;
    if (payload.exp <= this.options.now()) throw new AuthenticationError("The token has expired: get a new one");
    return payload;
  }

  private mac(body: string): string {
    return createHmac("sha256", this.secret).update(body).digest("base64url");
  }

  private requireEnabled(): void {
    if (this.options.policy.allow === "none") throw new ApiError(403, "This node does not make API keys for wallets (web3Keys.allow is none in the wallet config)");
  }
}
