import { base58 } from "@scure/base";
import { getAddress } from "viem";
import { createSiweMessage } from "viem/siwe";
import { beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/Store.js";
import { PublicOrigins } from "../../src/x402/PublicOrigins.js";
import { NonceStore } from "../../src/x402/siwx/NonceStore.js";
import { formatSiwxMessage, parseSiwxMessage } from "../../src/x402/siwx/SiwxMessage.js";
import { SiwxVerifier, type SiwxFailure } from "../../src/x402/siwx/SiwxVerifier.js";
import { b64json, evmSignIn, evmWallet, SOLANA_MAINNET_REF, solanaSignIn, solanaWallet } from "../helpers/wallets.js";

const DOMAIN = "node.example:8443";
const CHAINS = ["eip155:8453", `solana:${SOLANA_MAINNET_REF}`];
let now = Date.parse("2026-06-01T12:00:00Z");
let verifier: SiwxVerifier;
let nonces: NonceStore;

beforeEach(() => {
  now = Date.parse("2026-06-01T12:00:00Z");
  const db = openStore(":memory:");
  nonces = new NonceStore(db, () => now, 0);
  verifier = new SiwxVerifier({
    origins: new PublicOrigins(`https://${DOMAIN}/hearth`),
    chains: CHAINS,
    maxAgeMs: 300_000,
    skewMs: 30_000,
    now: () => now,
    nonces,
  });
});

const at = (offsetMs: number) => new Date(now + offsetMs);
const fields = (extra: Record<string, unknown> = {}) => ({ domain: DOMAIN, uri: `https://${DOMAIN}/hearth/api/v1/chat/completions`, issuedAt: at(0), ...extra });

async function refusal(header: string): Promise<SiwxFailure | "accepted"> {
  try {
    await verifier.verify(header);
    return "accepted";
  } catch (error) {
    return (error as { reason: SiwxFailure }).reason;
  }
}

describe("sign-in message text", () => {
  it("parses what viem's createSiweMessage writes, and formats it back byte for byte", () => {
    const account = evmWallet();
    for (const statement of ["Sign in to Hearth", undefined]) {
      const text = createSiweMessage({
        address: account.address,
        chainId: 8453,
        domain: DOMAIN,
        nonce: "abcdef123456",
        uri: `https://${DOMAIN}`,
        version: "1",
        statement,
        issuedAt: at(0),
        expirationTime: at(60_000),
        resources: ["https://example.com/a"],
      });
      const parsed = parseSiwxMessage(text);
      expect(parsed).toMatchObject({ domain: DOMAIN, family: "evm", address: account.address, chainId: "8453", nonce: "abcdef123456", statement });
      expect(formatSiwxMessage(parsed)).toBe(text);
    }
  });

  it.each([
    ["a CRLF message", (t: string) => t.replaceAll("\n", "\r\n")],
    ["a missing blank line", (t: string) => t.replace("\n\n", "\n")],
    ["an unknown trailing line", (t: string) => `${t}\nFoo: bar`],
    ["fields out of order", (t: string) => t.replace(/Version: 1\nChain ID: 8453/, "Chain ID: 8453\nVersion: 1")],
  ])("refuses %s", (_name, change) => {
    const text = createSiweMessage({ address: evmWallet().address, chainId: 8453, domain: DOMAIN, nonce: "abcdef123456", uri: `https://${DOMAIN}`, version: "1", issuedAt: at(0) });
    expect(() => parseSiwxMessage(change(text))).toThrow();
  });
});

describe("SIGN-IN-WITH-X verification (offline)", () => {
  it("accepts an EVM sign-in bound to this node, chain and address, and returns the normalised wallet", async () => {
    const account = evmWallet();
    const signIn = await verifier.verify(await evmSignIn(account, fields()));
    expect(signIn).toMatchObject({ family: "evm", address: account.address.toLowerCase(), chainId: "eip155:8453", domain: DOMAIN });
  });

  it("accepts Solana sign-ins with base58 and base64 signatures", async () => {
    const wallet = solanaWallet();
    expect((await verifier.verify(solanaSignIn(wallet, fields()))).address).toBe(wallet.address);
    expect((await verifier.verify(solanaSignIn(wallet, fields({ encoding: "base64" })))).chainId).toBe(`solana:${SOLANA_MAINNET_REF}`);
  });

  it("accepts the x402 extension's structured proof (no message field)", async () => {
    const account = evmWallet();
    const proof = {
      domain: DOMAIN,
      address: account.address,
      statement: "Sign in to Hearth",
      uri: `https://${DOMAIN}`,
      version: "1",
      chainId: "eip155:8453",
      type: "eip191",
      nonce: "0123456789abcdef0123456789abcdef",
      issuedAt: at(0).toISOString(),
      expirationTime: at(300_000).toISOString(),
    };
    const signature = await account.signMessage({
      message: formatSiwxMessage({ ...proof, family: "evm", chainId: "8453", address: getAddress(account.address) }),
    });
    expect((await verifier.verify(b64json({ ...proof, signature }))).address).toBe(account.address.toLowerCase());
  });

  it("refuses a tampered message (signature over other bytes)", async () => {
    const header = await evmSignIn(evmWallet(), fields(), (m) => m.replace("Sign in to Hearth", "Sign in to Hearth!"));
    expect(await refusal(header)).toBe("invalid_signature");
  });

  it("refuses a sign-in for another domain, or a URI on another origin", async () => {
    expect(await refusal(await evmSignIn(evmWallet(), fields({ domain: "evil.example", uri: "https://evil.example" })))).toBe("domain_mismatch");
    expect(await refusal(await evmSignIn(evmWallet(), fields({ uri: "https://evil.example/api" })))).toBe("uri_mismatch");
    expect(await refusal(await evmSignIn(evmWallet(), fields({ uri: `http://${DOMAIN}/` })))).toBe("uri_mismatch");
  });

  it("refuses an unsupported chain, and a chainId that disagrees with the signed Chain ID", async () => {
    expect(await refusal(await evmSignIn(evmWallet(), fields({ chainId: 1 })))).toBe("unsupported_chain");
    const header = await evmSignIn(evmWallet(), fields());
    const payload = JSON.parse(Buffer.from(header, "base64").toString());
    expect(await refusal(b64json({ ...payload, chainId: 1 }))).toBe("chain_mismatch");
    expect(await refusal(solanaSignIn(solanaWallet(), fields({ chainRef: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1" })))).toBe("unsupported_chain");
  });

  it("refuses a signature presented for another address", async () => {
    const header = await evmSignIn(evmWallet(), fields());
    const payload = JSON.parse(Buffer.from(header, "base64").toString());
    expect(await refusal(b64json({ ...payload, address: evmWallet().address }))).toBe("address_mismatch");
    // A Solana signature moved under another public key does not verify.
    const wallet = solanaWallet();
    const other = solanaWallet();
    const solana = JSON.parse(Buffer.from(solanaSignIn(wallet, fields()), "base64").toString());
    const moved = { ...solana, address: other.address, message: solana.message.replace(wallet.address, other.address) };
    expect(await refusal(b64json(moved))).toBe("invalid_signature");
  });

  it("refuses expired, stale and future sign-ins", async () => {
    expect(await refusal(await evmSignIn(evmWallet(), fields({ issuedAt: at(-6 * 60_000), expirationTime: at(60_000) })))).toBe("expired");
    expect(await refusal(await evmSignIn(evmWallet(), fields({ issuedAt: at(-60_000), expirationTime: at(-1_000) })))).toBe("expired");
    expect(await refusal(await evmSignIn(evmWallet(), fields({ issuedAt: at(120_000) })))).toBe("not_yet_valid");
    // Within the skew is fine.
    expect(await refusal(await evmSignIn(evmWallet(), fields({ issuedAt: at(20_000) })))).toBe("accepted");
  });

  it("spends a nonce only after the signature verified, and refuses its replay until it is evicted", async () => {
    const account = evmWallet();
    const header = await evmSignIn(account, fields({ nonce: "replay0001" }));
    // A forged sign-in naming the same wallet and nonce does not burn it.
    const forged = await evmSignIn(account, fields({ nonce: "replay0001" }), (m) => m.replace("Hearth", "Hearth?"));
    expect(await refusal(forged)).toBe("invalid_signature");
    expect(await refusal(header)).toBe("accepted");
    expect(await refusal(header)).toBe("nonce_reused");
    expect(nonces.size()).toBe(1);
    // Past the window the sign-in is refused as expired, and the nonce row is swept.
    now += 6 * 60_000;
    expect(await refusal(header)).toBe("expired");
    nonces.consume("unrelated", now + 1);
    expect(nonces.size()).toBe(1);
  });

  it("refuses malformed headers and contract-wallet signature types", async () => {
    expect(await refusal("not base64 !!")).toBe("malformed_header");
    expect(await refusal(b64json(["an", "array"]))).toBe("malformed_header");
    expect(await refusal(b64json({ address: "0x0", message: "hello", signature: "0x" }))).toBe("malformed_message");
    const payload = JSON.parse(Buffer.from(await evmSignIn(evmWallet(), fields()), "base64").toString());
    expect(await refusal(b64json({ ...payload, type: "eip1271" }))).toBe("unsupported_signature_type");
    expect(await refusal(b64json({ ...payload, signature: `${payload.signature}00` }))).toBe("invalid_signature");
  });

  it("without --public-url binds to the listen addresses (a wildcard host means every interface)", () => {
    const origins = new PublicOrigins(undefined);
    origins.setListenAddress("127.0.0.1", 9123);
    expect(origins.list().map((o) => o.domain)).toEqual(["127.0.0.1:9123", "localhost:9123"]);
    const lan = new PublicOrigins(undefined);
    lan.setListenAddress("0.0.0.0", 80);
    expect(lan.match("localhost")?.origin).toBe("http://localhost");
    expect(lan.match("127.0.0.1")).toBeDefined();
    expect(lan.match("evil.example")).toBeUndefined();
    expect(base58.decode(solanaWallet().address).length).toBe(32);
  });
});
