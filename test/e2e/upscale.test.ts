import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { tinyUpscaleEntry } from "../helpers/mediaModels.js";
import { noisePng } from "../helpers/pictures.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyUpscaleEntry(),
      // Small tiles on a picture whose every tile read is a multiple of the processor's pad size: tiled and whole must agree exactly.
      tinyUpscaleEntry({ id: "tiny-upscale-tiled", upscale: { tileSize: 32, tileOverlap: 8 } }),
      tinyUpscaleEntry({ id: "tiny-upscale-small", upscale: { maxOutputPixels: 20_000 } }),
    ],
  });
});
afterAll(() => server.stop());

/** A picture with structure: a horizontal gradient, a vertical one, and a bright square. */
async function picture(width: number, height: number, format: "png" | "jpeg" = "png"): Promise<Buffer> {
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const inSquare = x > width / 4 && x < width / 2 && y > height / 4 && y < height / 2;
      rgb[i] = inSquare ? 250 : Math.round((x / width) * 200);
      rgb[i + 1] = inSquare ? 240 : Math.round((y / height) * 200);
      rgb[i + 2] = 60;
    }
  const image = sharp(rgb, { raw: { width, height, channels: 3 } });
  return format === "png" ? image.png().toBuffer() : image.jpeg().toBuffer();
}

const upscale = (body: Record<string, unknown>, key?: string) => post(server, "/image/upscale", body, { key });

async function pixels(png: Buffer) {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return { data, ...info };
}

describe("POST /image/upscale", () => {
  it("answers a PNG exactly twice as large from a base64 JSON body, charged the 2x price", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await upscale({ image: (await picture(64, 48)).toString("base64"), scale: 2 }, key);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: "png", width: 128, height: 96 });
    expect(Number(res.headers.get("x-service-cost-usd"))).toBe(0.002);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 2000);
  });

  it("scale 4 from a multipart upload (a JPEG): two passes of the x2 model, four times each side, the 4x price", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const form = new FormData();
    form.append("image", new Blob([await picture(40, 30, "jpeg")], { type: "image/jpeg" }), "photo.jpg");
    form.append("scale", "4");
    const res = await fetch(`${server.baseUrl}/image/upscale`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 160, height: 120 });
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 8000);
  });

  it("upscales a multipart picture of hundreds of kilobytes (its bytes are not read as JSON)", async () => {
    const photo = await noisePng(400, 400);
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(photo)], { type: "image/png" }), "photo.png");
    const res = await fetch(`${server.baseUrl}/image/upscale`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(res.status, await res.clone().text()).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 800, height: 800 });
  });

  it("tiles a picture larger than a tile with no seam: the tiled result equals the whole-picture result", async () => {
    const image = (await picture(96, 64)).toString("base64");
    const whole = await pixels(Buffer.from(await (await upscale({ image, model: "tiny-upscale" })).arrayBuffer()));
    const tiled = await pixels(Buffer.from(await (await upscale({ image, model: "tiny-upscale-tiled" })).arrayBuffer()));
    expect({ width: tiled.width, height: tiled.height }).toEqual({ width: 192, height: 128 });
    expect(tiled.data.equals(whole.data)).toBe(true);
    // And the picture is the input enlarged: the bright square is still there, where it was.
    const at = (x: number, y: number) => whole.data[(y * whole.width + x) * whole.channels]!;
    expect(at(70, 45)).toBeGreaterThan(200);
    expect(at(10, 100)).toBeLessThan(100);
  });

  it("scales by the largest factor that fits the model's pixel limit, and refuses a picture that cannot grow (413)", async () => {
    const reduced = await upscale({ image: (await picture(50, 50)).toString("base64"), scale: 4, model: "tiny-upscale-small" });
    expect(reduced.status).toBe(200);
    const meta = await sharp(Buffer.from(await reduced.arrayBuffer())).metadata();
    // sqrt(20,000 / 2,500) = 2.83: 141 x 141.
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 141, height: 141 });
    const tooLarge = await upscale({ image: (await picture(150, 140)).toString("base64"), model: "tiny-upscale-small" });
    expect(tooLarge.status).toBe(413);
  });

  it("names creativity as not honoured", async () => {
    const res = await upscale({ image: (await picture(16, 16)).toString("base64"), creativity: 0.01 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("creativity");
  });

  it("answers bad input with a 400 naming the field, and charges nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const image = (await picture(16, 16)).toString("base64");
    const cases: [Record<string, unknown>, string][] = [
      [{}, "image"],
      [{ image: "not an image at all!" }, "image"],
      [{ image: Buffer.from("plain text, not a picture").toString("base64") }, "image"],
      [{ image, scale: 3 }, "scale"],
      [{ image, scale: 8 }, "scale"],
      [{ image, model: "nope" }, "nope"],
    ];
    for (const [body, name] of cases) {
      const res = await upscale(body, key);
      expect(res.status, name).toBeGreaterThanOrEqual(400);
      expect(res.status, name).toBeLessThan(500);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });
});
