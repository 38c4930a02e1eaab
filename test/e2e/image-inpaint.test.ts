import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { tinyImageEntry } from "../helpers/mediaModels.js";
import { fixturesDir, post, startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Edits on an inpainting export (a UNet with 9 input channels: latents, mask, the masked
 * picture's latents), next to an ordinary image model. onnxruntime refuses a sample of any
 * other channel count, so every 200 here is a run that fed the UNet the layout it was exported with.
 */

const SIZE = 64;
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyImageEntry({ image: { defaultWidth: SIZE, defaultHeight: SIZE } }),
      tinyImageEntry({
        id: "tiny-inpaint",
        type: "inpaint",
        file: join(fixturesDir(), "tiny-sd-inpaint"),
        traits: [],
        pricing: { generation: { usd: 0.02, diem: 0.02 } },
        image: { defaultWidth: SIZE, defaultHeight: SIZE },
      }),
    ],
  });
});
afterAll(() => server.stop());

/** Stripes and a square; `shift` moves the colours of the right half only. */
async function picture(shift = 0): Promise<Buffer> {
  const rgb = Buffer.alloc(SIZE * SIZE * 3);
  for (let y = 0; y < SIZE; y++)
    for (let x = 0; x < SIZE; x++) {
      const i = (y * SIZE + x) * 3;
      const right = x >= SIZE / 2 ? shift : 0;
      rgb[i] = ((x * 7) % 200) + right;
      rgb[i + 1] = ((y * 11) % 200) + right;
      rgb[i + 2] = x > SIZE / 3 && x < (2 * SIZE) / 3 ? 220 : 40;
    }
  return sharp(rgb, { raw: { width: SIZE, height: SIZE, channels: 3 } })
    .png()
    .toBuffer();
}

/** White (repaint) on the left half, black (keep) on the right. */
function leftHalfMask(): Promise<Buffer> {
  const grey = Buffer.alloc(SIZE * SIZE);
  for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE / 2; x++) grey[y * SIZE + x] = 255;
  return sharp(grey, { raw: { width: SIZE, height: SIZE, channels: 1 } })
    .png()
    .toBuffer();
}

async function rgbOf(png: Buffer): Promise<Buffer> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  expect({ width: info.width, height: info.height }).toEqual({ width: SIZE, height: SIZE });
  return data;
}

/** Largest per-channel difference over the kept (right) half, and mean difference over the repainted (left) half. */
function halves(a: Buffer, b: Buffer): { keptMax: number; repaintedMean: number } {
  let keptMax = 0;
  let repainted = 0;
  for (let y = 0; y < SIZE; y++)
    for (let x = 0; x < SIZE; x++)
      for (let c = 0; c < 3; c++) {
        const i = (y * SIZE + x) * 3 + c;
        const d = Math.abs(a[i]! - b[i]!);
        if (x >= SIZE / 2) keptMax = Math.max(keptMax, d);
        else repainted += d;
      }
  return { keptMax, repaintedMean: repainted / ((SIZE / 2) * SIZE * 3) };
}

const edit = async (body: Record<string, unknown>, key?: string) => post(server, "/image/edit", { prompt: "a red door", seed: 11, ...body }, { key });
const editBytes = async (body: Record<string, unknown>) => {
  const res = await edit(body);
  expect(res.status, await res.clone().text()).toBe(200);
  return Buffer.from(await res.arrayBuffer());
};

describe("inpaint models (a UNet with 9 input channels)", () => {
  it("edits without `model` go to the node's inpaint model, charged at its price", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await edit({ image: (await picture()).toString("base64") }, key);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("x-service-model-id")).toBe("tiny-inpaint");
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 20_000);
    // Naming the ordinary image model still edits with it.
    const plain = await edit({ image: (await picture()).toString("base64"), model: "tiny-sd" });
    expect(plain.headers.get("x-service-model-id")).toBe("tiny-sd");
  });

  it("with a mask, keeps the unmasked half's own pixels (tolerance 0 in PNG) and repaints the rest", async () => {
    const original = await picture();
    const out = await rgbOf(await editBytes({ image: original.toString("base64"), mask: (await leftHalfMask()).toString("base64") }));
    const { keptMax, repaintedMean } = halves(out, await rgbOf(original));
    expect(keptMax).toBe(0);
    expect(repaintedMean).toBeGreaterThan(5);
  });

  it("the repainted half depends on the kept half: the UNet reads the masked picture", async () => {
    const mask = (await leftHalfMask()).toString("base64");
    const a = await rgbOf(await editBytes({ image: (await picture(0)).toString("base64"), mask }));
    const b = await rgbOf(await editBytes({ image: (await picture(40)).toString("base64"), mask }));
    // Same seed, same mask, same pixels under the mask: only the kept half differs going in.
    expect(halves(a, b).repaintedMean).toBeGreaterThan(0);
  });

  it("a masked edit defaults to strength 1 (repaint from noise); an unmasked one to 0.75, and is deterministic for a seed", async () => {
    const image = (await picture()).toString("base64");
    const mask = (await leftHalfMask()).toString("base64");
    const byDefault = await editBytes({ image, mask });
    expect(byDefault.equals(await editBytes({ image, mask, strength: 1 }))).toBe(true);
    expect(byDefault.equals(await editBytes({ image, mask, strength: 0.5 }))).toBe(false);
    const unmasked = await editBytes({ image });
    expect(unmasked.equals(await editBytes({ image, strength: 0.75 }))).toBe(true);
    expect(unmasked.equals(await editBytes({ image, strength: 1 }))).toBe(false);
  });

  it("GET /models lists it as type inpaint with the reference's inpaint constraints; it is not a text-to-image model", async () => {
    const listed = (await (await fetch(`${server.baseUrl}/models?type=inpaint`)).json()) as { data: { id: string; type: string; model_spec: Record<string, unknown> }[] };
    expect(listed.data.map((m) => [m.id, m.type])).toEqual([["tiny-inpaint", "inpaint"]]);
    expect(listed.data[0]!.model_spec.constraints).toMatchObject({ combineImages: false, maxInputImages: 1, promptCharacterLimit: expect.any(Number) });
    expect((listed.data[0]!.model_spec.constraints as { aspectRatios: string[] }).aspectRatios).toContain("16:9");
    const generate = await post(server, "/image/generate", { model: "tiny-inpaint", prompt: "x" });
    expect(generate.status).toBe(404);
    expect(JSON.stringify(await generate.json())).toContain("tiny-inpaint");
  });
});
