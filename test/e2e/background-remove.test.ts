import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { tinyBackgroundRemovalEntry, tinyImageEntry } from "../helpers/mediaModels.js";
import { noisePng } from "../helpers/pictures.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
let peer: Server;
let peerUrl: string;
beforeAll(async () => {
  server = await startTestServer({
    models: [tinyBackgroundRemovalEntry(), tinyImageEntry({ pricing: { generation: { usd: 0.01, diem: 0.01 } }, image: { defaultWidth: 64, defaultHeight: 64 } })],
    config: { webScraping: "on" },
  });
  // A file server on loopback, for image_url.
  const png = await portrait(80, 60);
  peer = createServer((req, res) => {
    if (req.url === "/portrait.png") res.writeHead(200, { "content-type": "image/png" }).end(png);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await server.stop();
  peer.close();
});

/** A light subject (a disc) on a dark ground. */
async function portrait(width: number, height: number): Promise<Buffer> {
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const inside = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (Math.min(width, height) / 3) ** 2;
      rgb.fill(inside ? 230 : 20, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
  return sharp(rgb, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

async function alphaOf(png: Buffer) {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const alpha = (x: number, y: number) => data[(y * info.width + x) * info.channels + 3]!;
  return { info, alpha };
}

describe("POST /image/background-remove", () => {
  it("answers a PNG of the same size with an alpha channel: opaque on the subject, transparent on the ground, charged per picture", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await post(server, "/image/background-remove", { image: (await portrait(80, 60)).toString("base64") }, { key });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    const { info, alpha } = await alphaOf(Buffer.from(await res.arrayBuffer()));
    expect({ width: info.width, height: info.height, channels: info.channels }).toEqual({ width: 80, height: 60, channels: 4 });
    expect(alpha(40, 30)).toBeGreaterThan(200);
    expect(alpha(3, 3)).toBeLessThan(50);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 1000);
  });

  it("takes a multipart upload, and image_url from a peer when fetching is on", async () => {
    const form = new FormData();
    form.append("image", new Blob([await portrait(64, 64)], { type: "image/png" }), "p.png");
    const multipart = await fetch(`${server.baseUrl}/image/background-remove`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(multipart.status).toBe(200);
    expect((await alphaOf(Buffer.from(await multipart.arrayBuffer()))).info.channels).toBe(4);
    // A photo's size: its bytes are not read as JSON.
    const photo = new FormData();
    photo.append("image", new Blob([new Uint8Array(await noisePng(400, 400))], { type: "image/png" }), "photo.png");
    const large = await fetch(`${server.baseUrl}/image/background-remove`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: photo });
    expect(large.status, await large.clone().text()).toBe(200);
    const byUrl = await post(server, "/image/background-remove", { image_url: `${peerUrl}/portrait.png` });
    expect(byUrl.status).toBe(200);
    expect((await alphaOf(Buffer.from(await byUrl.arrayBuffer()))).info.width).toBe(80);
    const missing = await post(server, "/image/background-remove", { image_url: `${peerUrl}/missing.png` });
    expect(missing.status).toBe(422);
  });

  it("answers bad input with a 4xx naming the field, and charges nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const cases: [Record<string, unknown>, number, string][] = [
      [{}, 400, "image"],
      [{ image: "@@@" }, 400, "image"],
      [{ image: Buffer.from("not a picture").toString("base64") }, 400, "image"],
      [{ image_url: "ftp://example.com/a.png" }, 400, "image_url"],
      [{ image: "aGk=", model: "nope" }, 404, "nope"],
    ];
    for (const [body, status, name] of cases) {
      const res = await post(server, "/image/background-remove", body, { key });
      expect(res.status, name).toBe(status);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });

  it("is not listed in GET /models (a type of this node's own), and shows in GET /admin/models", async () => {
    const listed = (await (await fetch(`${server.baseUrl}/models?type=all`)).json()) as { data: { id: string }[] };
    expect(listed.data.map((m) => m.id)).not.toContain("tiny-background-removal");
    expect((await fetch(`${server.baseUrl}/models/tiny-background-removal`)).status).toBe(404);
    const admin = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${server.adminKey}` } });
    expect(JSON.stringify(await admin.json())).toContain("tiny-background-removal");
  });
});

describe("POST /images/generations with background: transparent", () => {
  it("cuts each generated picture out with the background-removal model: a PNG with alpha, charged for both models", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await post(server, "/images/generations", { prompt: "a lighthouse", background: "transparent", output_format: "png" }, { key });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBeNull();
    const body = (await res.json()) as { data: { b64_json: string }[] };
    const { info } = await alphaOf(Buffer.from(body.data[0]!.b64_json, "base64"));
    expect(info.channels).toBe(4);
    // $0.01 for the picture, $0.001 for the cut-out.
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 11_000);
    const opaque = await post(server, "/images/generations", { prompt: "a lighthouse", output_format: "png" }, { key });
    const plain = (await opaque.json()) as { data: { b64_json: string }[] };
    expect((await sharp(Buffer.from(plain.data[0]!.b64_json, "base64")).metadata()).hasAlpha).toBe(false);
  });

  it("refuses a transparent JPEG with a 400 naming background", async () => {
    const res = await post(server, "/images/generations", { prompt: "a lighthouse", background: "transparent", output_format: "jpeg" });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("background");
  });
});

describe("pictures too large to read", () => {
  it("a small file holding 7000x7000 pixels is a 413 naming the field, found from its header before any decoding, on every image-in route", async () => {
    // About 150 KB of PNG for 49 million pixels (147 MB decoded).
    const bomb = await sharp({ create: { width: 7000, height: 7000, channels: 3, background: "#000" } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(bomb.length).toBeLessThan(1_000_000);
    const image = bomb.toString("base64");
    const cut = await post(server, "/image/background-remove", { image });
    expect(cut.status).toBe(413);
    expect(((await cut.json()) as { error: string }).error).toMatch(/^image: the picture is 7000x7000/);
    const edit = await post(server, "/image/edit", { prompt: "x", image });
    expect(edit.status).toBe(413);
    await edit.arrayBuffer();
    // The node still answers.
    expect((await fetch(`${server.baseUrl}/models`)).status).toBe(200);
  });
});
