import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sizeForAspectRatio } from "../../src/api/images/service.js";
import { writeStableDiffusionModel } from "../../src/fixtures/onnx/index.js";
import { getBalances } from "../../src/store/ledger.js";
import { tinyImageEntry } from "../helpers/mediaModels.js";
import { noisePng, pngClaiming } from "../helpers/pictures.js";
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

/** Of two 64x64 pictures: the largest difference on the right half (kept) and the summed difference on the left (repainted). */
function leftHalfDiffs(out: { data: Buffer }, input: { data: Buffer }) {
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
  return { keptDiff, repaintedDiff };
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
    const { keptDiff, repaintedDiff } = leftHalfDiffs(out, input);
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
      // A header claiming 10 billion pixels: refused on its size, never decoded (decoding it is what fails).
      [{ image, mask: pngClaiming(100_000, 100_000).toString("base64") }, 400, "the mask is 100000x100000; it must be the image's size"],
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

describe("uploads of a photo's size", () => {
  it("edits a multipart picture of hundreds of kilobytes on every edit route (its bytes are not read as JSON)", async () => {
    const photo = await noisePng(400, 400);
    expect(photo.length).toBeGreaterThan(400_000);
    for (const [path, field] of [
      ["/image/edit", "image"],
      ["/image/multi-edit", "images"],
      ["/images/edits", "image"],
    ] as const) {
      const form = new FormData();
      form.append("prompt", "x");
      form.append(field, new Blob([new Uint8Array(photo)], { type: "image/png" }), "photo.png");
      const res = await fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    }
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

/** Opaque everywhere but the left half, which is transparent: the standard's mask (transparent = repaint). */
function transparentLeftHalfMask(width: number, height: number): Promise<Buffer> {
  const rgba = Buffer.alloc(width * height * 4, 255);
  for (let y = 0; y < height; y++) for (let x = 0; x < width / 2; x++) rgba[(y * width + x) * 4 + 3] = 0;
  return sharp(rgba, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}

describe("POST /images/edits (the standard's, as the openai client sends it)", () => {
  const client = (key: string) => new OpenAI({ baseURL: server.baseUrl, apiKey: key, maxRetries: 0 });
  const png = async (bytes: Buffer, name = "in.png") => toFile(bytes, name, { type: "image/png" });

  it("edits a picture at its own aspect ratio, an OpenAI model name meaning the default edit model, charged as one image", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const result = await client(key).images.edit({ model: "gpt-image-1", image: await png(await picture(120, 90)), prompt: "make it a sunset" });
    expect(result.data).toHaveLength(1);
    const meta = await sharp(Buffer.from(result.data![0]!.b64_json!, "base64")).metadata();
    expect(meta.format).toBe("png");
    expect({ width: meta.width, height: meta.height }).toEqual(sizeForAspectRatio("120:90", tinyImageEntry({ image: { defaultWidth: 64, defaultHeight: 64 } })));
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 10_000);
  });

  it("makes the exact size asked for, as a data URL for response_format url, in the output_format asked for", async () => {
    const result = await client(server.adminKey).images.edit({
      image: await png(await picture(120, 90)),
      prompt: "snow",
      size: "256x256",
      response_format: "url",
      output_format: "webp",
    });
    const url = result.data![0]!.url!;
    expect(url.startsWith("data:image/webp;base64,")).toBe(true);
    const meta = await sharp(Buffer.from(url.slice(url.indexOf(",") + 1), "base64")).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: "webp", width: 256, height: 256 });
  });

  it("repaints only where the mask is transparent: the rest is the picture's own pixels", async () => {
    const original = await picture(64, 64);
    const result = await client(server.adminKey).images.edit({
      image: await png(original),
      mask: await png(await transparentLeftHalfMask(64, 64), "mask.png"),
      prompt: "a red door",
    });
    const out = await pixels(Buffer.from(result.data![0]!.b64_json!, "base64"));
    const input = await pixels(original);
    const { keptDiff, repaintedDiff } = leftHalfDiffs(out, input);
    expect(keptDiff).toBe(0);
    expect(repaintedDiff / (32 * 64 * 3)).toBeGreaterThan(5);
  });

  it("names quality and input_fidelity as not honoured", async () => {
    const res = await client(server.adminKey)
      .images.edit({ image: await png(await picture(64, 64)), prompt: "x", quality: "high", input_fidelity: "high" })
      .asResponse();
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("quality,input_fidelity");
  });

  it("answers bad input with a 4xx naming the field, and charges nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const image = await picture(64, 64);
    const send = async (fields: Record<string, string>, files: [string, Buffer][]) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      for (const [name, bytes] of files) form.append(name, new Blob([new Uint8Array(bytes)], { type: "image/png" }), `${name}.png`);
      return fetch(`${server.baseUrl}/images/edits`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    };
    const cases: [Record<string, string>, [string, Buffer][], number, string][] = [
      [{ prompt: "x" }, [], 400, "image"],
      [
        { prompt: "x" },
        [
          ["image[]", image],
          ["image[]", image],
        ],
        400,
        "image",
      ],
      [{ prompt: "x" }, [["image", Buffer.from("not a picture")]], 400, "image"],
      [
        { prompt: "x" },
        [
          ["image", image],
          ["mask", await transparentLeftHalfMask(32, 32)],
        ],
        400,
        "mask",
      ],
      [{ prompt: "x", size: "1792x1024" }, [["image", image]], 400, "size"],
      [{ prompt: "x", size: "300x300" }, [["image", image]], 400, "size"],
      [{ prompt: "x", n: "2" }, [["image", image]], 400, "n"],
      [{ prompt: "x", stream: "true" }, [["image", image]], 400, "stream"],
      [{ prompt: "" }, [["image", image]], 400, "prompt"],
      [{ prompt: "x", output_format: "jpeg", background: "transparent" }, [["image", image]], 400, "background"],
    ];
    for (const [fields, files, status, name] of cases) {
      const res = await send(fields, files);
      expect(res.status, name).toBe(status);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    const json = await post(server, "/images/edits", { prompt: "x", image: image.toString("base64") }, { key });
    expect(json.status).toBe(415);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });
});
