import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { b64json, decodeB64Json, evmPayment, evmSignIn, evmWallet } from "../helpers/wallets.js";

const PAY_TO = evmWallet().address;
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

/** Everything the server logs, as text (what would have gone to stderr). */
let captured = "";
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    captured += chunk.toString();
    done();
  },
});
const lines = (from = 0) =>
  captured
    .slice(from)
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [tinyChatEntry()],
    // debug: the "request rejected" lines of 4xx answers are captured too.
    logger: createLogger("debug", { destination: sink }),
    config: { wallet: { x402: { settlement: "off", base: { payTo: PAY_TO } } } } as never,
  });
});
afterAll(() => server.stop());

const ask = { model: "tiny-chat", messages: [{ role: "user", content: "Hello" }], max_tokens: 3, temperature: 0 };

/** Waits until every request id has its access-log line (written when the response closes). */
async function accessLines(ids: string[], from: number) {
  for (let i = 0; i < 100; i++) {
    const access = lines(from).filter((l) => l.msg === "request");
    if (ids.every((id) => access.some((l) => l.requestId === id))) return access;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`missing access lines for some of ${ids.join(", ")}:\n${captured.slice(from)}`);
}

describe("structured request logs", () => {
  it("tags every request-scoped line with the request id, writes one access line per request, and never logs a key or a signature", async () => {
    // Model lifecycle lines (loading, loaded) belong to the node, not to the request that
    // happened to need the model: load it before the window whose lines must all carry an id.
    await server.models.load("tiny-chat");
    const from = captured.length;
    const { key, keyId } = server.createKey({ usd: 1 });
    const ids: string[] = [];
    const idOf = (res: Response) => {
      const id = res.headers.get("cf-ray");
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      ids.push(id!);
      return id!;
    };

    // A paid chat with an API key.
    const ok = await post(server, "/chat/completions", ask, { key });
    expect(ok.status).toBe(200);
    const okId = idOf(ok);

    // A wallet sign-in whose signature does not match the message.
    const domain = new URL(server.url).host;
    const signIn = await evmSignIn(evmWallet(), { domain }, (message) => message.replace("Sign in to Hearth", "Sign in to Hearth and pay"));
    const signInSignature = decodeB64Json<{ signature: string }>(signIn).signature;
    const badSignIn = await post(server, "/chat/completions", ask, { key: null, headers: { "SIGN-IN-WITH-X": signIn } });
    expect(badSignIn.status).toBe(401);
    idOf(badSignIn);

    // A top-up whose payment signature no longer matches the authorization.
    const payment = decodeB64Json((await evmPayment(evmWallet(), { asset: BASE_USDC, payTo: PAY_TO, value: 5_000_000n })).header);
    const paymentSignature = payment.payload.signature as string;
    payment.payload.authorization.value = "500000000";
    const paymentHeader = b64json(payment);
    const badPayment = await fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": paymentHeader } });
    expect(badPayment.status).toBe(400);
    idOf(badPayment);

    // A wrong API key (it is a secret too: it could be a real key with a typo).
    const wrongKey = `${key.slice(0, -4)}zzzz`;
    const badKey = await post(server, "/chat/completions", ask, { key: wrongKey });
    expect(badKey.status).toBe(401);
    idOf(badKey);

    const access = await accessLines(ids, from);
    // Every line written while the requests ran belongs to one of them.
    const logged = lines(from);
    expect(logged.length).toBeGreaterThan(ids.length);
    for (const line of logged) expect(ids, JSON.stringify(line)).toContain(line.requestId);
    // One access line per request, at info.
    for (const id of ids) expect(access.filter((l) => l.requestId === id)).toHaveLength(1);
    expect(access.every((l) => l.level === 30)).toBe(true);
    expect(access.find((l) => l.requestId === okId)).toMatchObject({
      method: "POST",
      route: "/api/v1/chat/completions",
      status: 200,
      model: "tiny-chat",
      keyId,
      durationMs: expect.any(Number),
    });
    expect(access.find((l) => l.requestId === ids[2])).toMatchObject({ route: "/api/v1/x402/top-up", status: 400 });
    expect(logged.some((l) => l.msg === "request rejected" && l.requestId === ids[1])).toBe(true);

    // No secret anywhere in the output, in any encoding the requests carried it.
    for (const secret of [key, wrongKey, key.slice(-12), signIn, signInSignature, signInSignature.slice(2, 40), paymentHeader, paymentSignature, paymentSignature.slice(2, 40)]) {
      expect(captured).not.toContain(secret);
    }
  });

  it("redacts credentials that reach a log call anyway", () => {
    const from = captured.length;
    const { key } = server.createKey();
    server.logger.info(
      {
        req: { headers: { authorization: `Bearer ${key}`, cookie: `session=${key}`, "x-api-key": key, "payment-signature": "0xsig" } },
        apiKey: key,
        wallet: { signature: "0xsig", secretKey: key },
      },
      "careless",
    );
    const [line] = lines(from);
    expect(line).toMatchObject({
      req: { headers: { authorization: "[redacted]", cookie: "[redacted]", "x-api-key": "[redacted]", "payment-signature": "[redacted]" } },
      apiKey: "[redacted]",
      wallet: { signature: "[redacted]", secretKey: "[redacted]" },
    });
    expect(captured.slice(from)).not.toContain(key);
    expect(captured.slice(from)).not.toContain("0xsig");
  });
});
