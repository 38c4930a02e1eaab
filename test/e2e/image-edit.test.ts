import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sizeForAspectRatio } from "../../src/api/images/service.js";
import { writeStableDiffusionModel } from "../../src/fixtures/onnx/index.js";
import { getBalances } from "../../src/store/ledger.js";
import { tinyImageEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

const noEncoderDir = mkdtempSync(join(tmpdir(), "hearth-sd-no-encoder-"));
let server: TestServer;
beforeAll(async () => {
  await writeStableDiffusionModel(noEncoderDir, { vaeEncoder: false });
  server = await startTestServer({
    models: [
      tinyImageEntry({ pricing: { generation: { usd: 0.01, diem: 0.01 } }, image: { defaultWidth: 64, defaultHeight: 64 } }),
      tinyImageEntry({ id: "sd-no-encoder", file: noEncoderDir, traits: [], image: { defaultWidth: 64, defaultHeight: 64 } }),
    ],
    config: { maxUploadMb: 1 },
  });
});
afterAll(async () => {
  await server.stop();
  rmSync(noEncoderDir, { recursive: true, force: true });
});

/** Stripes and a square: a picture with structure. */
async function picture(width: number, height: number): Promise<Buffer> {
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      rgb[i] = (x * 7) % 256;
      rgb[i + 1] = (y * 11) % 256;
      rgb[i + 2] = x > width / 3 && x < (2 * width) / 3 ? 220 : 40;
    }
  return sharp(rgb, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** White (repaint) on the left half, black (keep) on the right. */
function leftHalfMask(width: number, height: number): Promise<Buffer> {
  const grey = Buffer.alloc(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width / 2; x++) grey[y * width + x] = 255;
  return sharp(grey, { raw: { width, height, channels: 1 } })
    .png()
    .toBuffer();
}

async function pixels(png: Buffer) {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const edit = (body: Record<string, unknown>, key?: string) => post(server, "/image/edit", { prompt: "make it a sunset", seed: 7, ...body }, { key });

describe("POST /image/edit", () => {
  it("edits a base64 picture into a PNG on the model's size grid at the picture's aspect ratio, charged as one image", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await edit({ image: (await picture(120, 90)).toString("base64") }, key);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    const expected = sizeForAspectRatio("120:90", tinyImageEntry({ image: { defaultWidth: 64, defaultHeight: 64 } }));
    expect({ width: meta.width, height: meta.height }).toEqual(expected);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 10_000);
  });

  it("is deterministic for a seed, and strength changes the result", async () => {
    const image = (await picture(64, 64)).toString("base64");
    const bytes = async (body: Record<string, unknown>) => Buffer.from(await (await edit({ image, ...body })).arrayBuffer());
    const a = await bytes({ strength: 0.5 });
    expect(a.equals(await bytes({ strength: 0.5 }))).toBe(true);
    expect(a.equals(await bytes({ strength: 1 }))).toBe(false);
  });

  it("with a mask, repaints only the masked half: the rest is the picture's own pixels (tolerance 0 in PNG)", async () => {
    const original = await picture(64, 64);
    const form = new FormData();
    form.append("prompt", "a red door");
    form.append("seed", "3");
    form.append("strength", "1");
    form.append("image", new Blob([new Uint8Array(original)], { type: "image/png" }), "in.png");
    form.append("mask", new Blob([new Uint8Array(await leftHalfMask(64, 64))], { type: "image/png" }), "mask.png");
    const res = await fetch(`${server.baseUrl}/image/edit`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(res.status, await res.clone().text()).toBe(200);
    const out = await pixels(Buffer.from(await res.arrayBuffer()));
    const input = await pixels(original);
    expect({ width: out.width, height: out.height }).toEqual({ width: 64, height: 64 });
    let keptDiff = 0;
    let repaintedDiff = 0;
    for (let y = 0; y < 64; y++)
      for (let x = 0; x < 64; x++)
        for (let c = 0; c < 3; c++) {
          const i = (y * 64 + x) * 3 + c;
          const d = Math.abs(out.data[i]! - input.data[i]!);
          if (x >= 32) keptDiff = Math.max(keptDiff, d);
          else repaintedDiff += d;
        }
    expect(keptDiff).toBe(0);
    expect(repaintedDiff / (32 * 64 * 3)).toBeGreaterThan(5);
  });

  it("answers bad input with a 4xx naming the field, and charges nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const image = (await picture(64, 64)).toString("base64");
    const cases: [Record<string, unknown>, number, string][] = [
      [{ image: undefined }, 400, "image"],
      [{ image: Buffer.from("not a picture").toString("base64") }, 400, "image"],
      [{ image, mask: (await leftHalfMask(32, 32)).toString("base64") }, 400, "mask"],
      [{ image, mask: "%%%" }, 400, "mask"],
      [{ image, strength: 0 }, 400, "strength"],
      [{ image, prompt: "" }, 400, "prompt"],
      [{ image, model: "sd-no-encoder" }, 400, "model"],
      [{ image, model: "nope" }, 404, "nope"],
    ];
    for (const [body, status, name] of cases) {
      const res = await edit(body, key);
      expect(res.status, name).toBe(status);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    // A multipart upload past --max-upload-mb: 413.
    const form = new FormData();
    form.append("prompt", "x");
    form.append("image", new Blob([new Uint8Array(2_500_000)], { type: "image/png" }), "big.png");
    const big = await fetch(`${server.baseUrl}/image/edit`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    expect(big.status).toBe(413);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });
});

describe("POST /image/multi-edit", () => {
  it("edits one picture given as images (multipart), and refuses more than one with a 400 naming images", async () => {
    const form = new FormData();
    form.append("prompt", "make it snow");
    form.append("images", new Blob([new Uint8Array(await picture(64, 64))], { type: "image/png" }), "a.png");
    const one = await fetch(`${server.baseUrl}/image/multi-edit`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(one.status, await one.clone().text()).toBe(200);
    expect(one.headers.get("content-type")).toBe("image/png");
    const image = (await picture(64, 64)).toString("base64");
    const two = await post(server, "/image/multi-edit", { prompt: "x", images: [image, image] });
    expect(two.status).toBe(400);
    expect(JSON.stringify(await two.json())).toContain("images");
    const withQuality = await post(server, "/image/multi-edit", { prompt: "x", images: [image], quality: "high", output_format: "jpg" });
    expect(withQuality.status).toBe(200);
    expect(withQuality.headers.get("content-type")).toBe("image/jpeg");
    expect(withQuality.headers.get("x-service-unsupported-parameters")).toBe("quality");
  });
});
