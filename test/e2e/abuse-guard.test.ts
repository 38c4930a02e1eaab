import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ABUSE_MAX_SUBJECTS, abuseGuardOf } from "../../src/limits/abuseGuard.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

interface Head {
  status: number;
  headers: Map<string, string>;
}

/**
 * Sends `keys.length` pipelined GET requests on one keep-alive connection (a fast client) and
 * returns the status line and headers of every response, in order.
 */
function pipelined(port: number, path: string, keys: string[]): Promise<Head[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const heads: Head[] = [];
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
      for (;;) {
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) break;
        const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
        const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
        const length = Number(headers.get("content-length") ?? 0);
        if (text.length < end + 4 + length) break;
        heads.push({ status: Number(statusLine!.split(" ")[1]), headers });
        text = text.slice(end + 4 + length);
      }
      if (heads.length === keys.length) {
        socket.end();
        resolve(heads);
      }
    });
    socket.on("error", reject);
    socket.write(keys.map((key) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`).join(""));
  });
}

const madeUpKey = () => `hth_${randomBytes(24).toString("base64url")}`;

describe("abuse guard", () => {
  it("counts made-up keys against the client address, blocks it, and keeps its state bounded over 12,000 requests (more made-up keys than ABUSE_MAX_SUBJECTS)", {
    timeout: 120_000,
  }, async () => {
    server = await startTestServer({ models: [] });
    const port = Number(new URL(server.url).port);
    // More made-up keys than the guard would ever track per key: the state must stay one address.
    const total = ABUSE_MAX_SUBJECTS + 2_000;
    const batch = 100;
    const counts = new Map<number, number>();
    let blocked: Head | undefined;
    let left = total;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (left > 0) {
          const n = Math.min(batch, left);
          left -= n;
          for (const head of await pipelined(port, "/api/v1/billing/balance", Array.from({ length: n }, madeUpKey))) {
            counts.set(head.status, (counts.get(head.status) ?? 0) + 1);
            if (head.status === 429) blocked = head;
          }
        }
      }),
    );
    expect([...counts.keys()].sort()).toEqual([401, 429]);
    // Requests already read when the block began still get their 401; the rest are refused.
    expect(counts.get(429)).toBeGreaterThan(total - 4 * batch - 21);
    expect(blocked!.headers.get("x-ratelimit-type")).toBe("user");
    // The last refusal names when the block (renewed while the flood went on) ends.
    const reset = Number(blocked!.headers.get("x-ratelimit-reset-requests")) * 1000;
    expect(reset).toBeGreaterThan(Date.now() - 1000);
    expect(reset).toBeLessThanOrEqual(Date.now() + 31_000);
    // One client address: its failure count and its block, whatever the number of keys made up.
    const size = abuseGuardOf(server.app).size();
    expect(size.blocked).toBe(1);
    expect(size.failures).toBeLessThanOrEqual(1);
    // A key of this node is an identity of its own: it still works from the blocked address.
    expect((await fetch(`${server.baseUrl}/billing/balance`, { headers: { authorization: `Bearer ${server.adminKey}` } })).status).toBe(200);
  });

  it("blocks a key of this node after more than 20 failures, from any address, with x-ratelimit-reset-requests", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    const { key } = server.createKey();
    for (let i = 0; i < 21; i++) expect((await post(server, "/chat/completions", "{not json", { key })).status).toBe(400);
    const refused = await post(server, "/chat/completions", { model: "tiny-chat", messages: [] }, { key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-type")).toBe("api_key");
    expect(refused.headers.get("x-ratelimit-reset-requests")).toBe(String((now + 30_000) / 1000));
    expect(refused.headers.get("retry-after")).toBe("30");
    // The key's failures were its own: the address is not blocked for other callers.
    expect(abuseGuardOf(server.app).size()).toEqual({ failures: 0, blocked: 1 });
    expect((await fetch(`${server.baseUrl}/billing/balance`, { headers: { authorization: `Bearer ${server.adminKey}` } })).status).toBe(200);
    // Blocks expire with their window and are forgotten.
    now += 30_000;
    expect((await fetch(`${server.baseUrl}/billing/balance`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect(abuseGuardOf(server.app).size()).toEqual({ failures: 0, blocked: 0 });
  });
});
