import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeSafetyCheckerModel } from "../../src/fixtures/onnx/index.js";
import { decodeImage } from "../../src/media/image.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { tinyImageEntry, tinySdPath } from "../helpers/mediaModels.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";
import { providerDocument, providerSchemaValidator } from "../helpers/providerSchema.js";

const PRICED = { pricing: { generation: { usd: 0.01, diem: 0.01 }, steps: { turbo: { usd: 0.002, diem: 0.002, max_steps: 4 } } } };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ models: [tinyImageEntry(PRICED), tinyChatEntry()] });
});
afterAll(() => server.stop());

const generate = (body: Record<string, unknown>, key?: string) => post(server, "/image/generate", { model: "tiny-sd", prompt: "a photo of a cat", ...body }, { key });
const json = async (res: Response) => (await res.json()) as any;

describe("POST /images/generations (the standard's endpoint, official client)", () => {
  it("returns a decodable PNG of the requested size", async () => {
    const result = await server.openai().images.generate({ model: "tiny-sd", prompt: "a red house by a lake", size: "256x256" });
    expect(result.data).toHaveLength(1);
    const png = Buffer.from(result.data![0]!.b64_json!, "base64");
    const decoded = await decodeImage(png);
    expect(decoded).toMatchObject({ format: "png", width: 256, height: 256 });
    expect(new Set(decoded.rgb).size).toBeGreaterThan(2);
  });

  it("maps a model this node lacks to its default image model, and url to a data URL", async () => {
    const result = await server.openai().images.generate({ model: "dall-e-3", prompt: "a cat", size: "512x512", response_format: "url", output_format: "webp" } as never);
    const url = result.data![0]!.url!;
    expect(url.startsWith("data:image/webp;base64,")).toBe(true);
    expect(await decodeImage(Buffer.from(url.split(",")[1]!, "base64"))).toMatchObject({ format: "webp", width: 512, height: 512 });
  });
});

describe("POST /images/generations: the standard's other fields", () => {
  // Its own key: the image tier allows 20 requests a minute.
  let key: string;
  beforeAll(() => {
    key = server.createKey({ usd: 10 }).key;
  });
  const simple = (body: Record<string, unknown>) => post(server, "/images/generations", { model: "tiny-sd", prompt: "a red house", size: "256x256", ...body }, { key });

  it("output_compression sets the jpeg and webp encoder's quality: lower is smaller", async () => {
    for (const output_format of ["jpeg", "webp"]) {
      const sizes: number[] = [];
      for (const output_compression of [100, 10]) {
        const res = await simple({ output_format, output_compression });
        expect(res.status).toBe(200);
        expect(res.headers.get("x-service-unsupported-parameters")).toBeNull();
        const bytes = Buffer.from(((await res.json()) as any).data[0].b64_json, "base64");
        expect((await decodeImage(bytes)).format).toBe(output_format);
        sizes.push(bytes.length);
      }
      expect(sizes[1], output_format).toBeLessThan(sizes[0]! * 0.8);
    }
    const png = await simple({ output_format: "png", output_compression: 50 });
    expect(png.status).toBe(200);
    expect(png.headers.get("x-service-unsupported-parameters")).toBe("output_compression");
  });

  it("a transparent background, a quality and the vivid style are accepted and named as not honoured", async () => {
    const res = await simple({ background: "transparent", quality: "hd", style: "vivid", user: "end-user-3" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("background,quality,style");
    const bytes = Buffer.from(((await res.json()) as any).data[0].b64_json, "base64");
    // No alpha channel: the background is opaque.
    expect((await sharp(bytes).metadata()).hasAlpha).toBe(false);
    const honoured = await simple({ background: "opaque", quality: "auto", style: "natural" });
    expect(honoured.headers.get("x-service-unsupported-parameters")).toBeNull();
    expect(listUsage(server.db).find((row) => row.user === "end-user-3")?.endpoint).toBe("/images/generations");
    for (const [name, value] of [
      ["background", "glass"],
      ["output_compression", 101],
      ["quality", "ultra"],
      ["style", "moody"],
    ] as const) {
      const bad = await simple({ [name]: value });
      expect(bad.status, name).toBe(400);
      expect(((await bad.json()) as any).details, name).toHaveProperty(name);
    }
  });
});

describe("POST /image/generate", () => {
  it.each(["webp", "png", "jpeg"] as const)("returns %s as base64 JSON and as binary", async (format) => {
    const res = await generate({ format, width: 128, height: 96, seed: 5 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-model-id")).toBe("tiny-sd");
    expect(res.headers.get("x-service-model-router")).toBe("onnxruntime/cpu");
    const body = await json(res);
    expect(body.id).toMatch(/^generate-image-/);
    expect(body.images).toHaveLength(1);
    expect(body.timing).toEqual({
      inferenceDuration: expect.any(Number),
      inferencePreprocessingTime: expect.any(Number),
      inferenceQueueTime: expect.any(Number),
      total: expect.any(Number),
    });
    expect(body.request).toMatchObject({ prompt: "a photo of a cat", format, seed: 5 });
    expect(await decodeImage(Buffer.from(body.images[0], "base64"))).toMatchObject({ format, width: 128, height: 96 });

    const binary = await generate({ format, width: 128, height: 96, seed: 5, return_binary: true });
    expect(binary.status).toBe(200);
    expect(binary.headers.get("content-type")).toBe(`image/${format}`);
    const bytes = Buffer.from(await binary.arrayBuffer());
    expect(bytes.equals(Buffer.from(body.images[0], "base64"))).toBe(true);
  });

  it("is deterministic: same seed, prompt and settings give the same image; another seed another", async () => {
    const settings = { seed: 424242, width: 128, height: 128, steps: 3, cfg_scale: 4, negative_prompt: "blurry", format: "png" };
    const [a, b, c] = await Promise.all([generate(settings), generate(settings), generate({ ...settings, seed: 424243 })]);
    const [first, second, third] = await Promise.all([json(a), json(b), json(c)]);
    expect(first.images[0]).toBe(second.images[0]);
    expect(third.images[0]).not.toBe(first.images[0]);
  });

  it("makes variants from consecutive seeds; a negative seed is a seed like any other", async () => {
    const body = await json(await generate({ seed: 10, variants: 3, width: 64, height: 64, format: "png" }));
    expect(body.images).toHaveLength(3);
    const single = await json(await generate({ seed: 11, width: 64, height: 64, format: "png" }));
    expect(body.images[1]).toBe(single.images[0]);
    const negative = await generate({ seed: -5, width: 64, height: 64 });
    expect(negative.status).toBe(200);
  });

  it("derives the size from aspect_ratio and embeds the settings in EXIF when asked", async () => {
    const body = await json(await generate({ aspect_ratio: "16:9", seed: 1, format: "jpeg", embed_exif_metadata: true }));
    const image = sharp(Buffer.from(body.images[0], "base64"));
    const meta = await image.metadata();
    expect(meta.width! / meta.height!).toBeCloseTo(16 / 9, 1);
    expect(meta.width! % 8).toBe(0);
    expect(meta.exif?.toString("latin1")).toContain("a photo of a cat");
  });

  it("applies style presets listed by GET /image/styles (public)", async () => {
    const styles = await fetch(`${server.baseUrl}/image/styles`);
    expect(styles.status).toBe(200);
    const list = (await styles.json()) as { object: string; data: string[] };
    expect(list.object).toBe("list");
    expect(list.data).toContain("Anime");
    const plain = await json(await generate({ seed: 3, width: 64, height: 64, format: "png" }));
    const styled = await json(await generate({ seed: 3, width: 64, height: 64, format: "png", style_preset: "anime" }));
    expect(styled.images[0]).not.toBe(plain.images[0]);
    const unknown = await generate({ style_preset: "Watercolour Dreams" });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).error).toMatch(/GET \/image\/styles/);
  });

  it("refuses what the model cannot do with 400s naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ width: 100 }, /width must be a multiple of 8/],
      [{ width: 2048 }, /up to 1280x1280/],
      [{ steps: 51 }, /at most 50 steps/],
      [{ variants: 2, return_binary: true }, /variants above 1 need return_binary: false/],
      [{ style_references: [{ image: "https://example.com/a.png", strength: 2 }] }, /style_references|less than or equal/],
      [{ enhance_prompt: "yes" }, /enhance_prompt|boolean/],
      [{ quality: "ultra" }, /quality|Invalid option/],
      [{ format: "gif" }, /format/],
    ];
    for (const [body, message] of cases) {
      const res = await generate(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const error = await json(res);
      expect(error.error).toMatch(message);
      expect(error.details).toBeDefined();
    }
    expect((await post(server, "/image/generate", { model: "tiny-chat", prompt: "x" })).status).toBe(404);
  });

  it("accepts the provider's full example body: honours what a local pipeline can and names the rest in x-service-unsupported-parameters", async () => {
    const schema = providerDocument().components.schemas.GenerateImageRequest;
    const example: Record<string, unknown> = Object.fromEntries(
      Object.entries(schema.properties as Record<string, { example?: unknown }>)
        .filter(([, property]) => property.example !== undefined)
        .map(([name, property]) => [name, property.example]),
    );
    // Every field the provider lists, deprecated in-painting too (its document gives no example).
    const body = { ...example, inpaint: { strength: 50, source_image: "aGVsbG8=" } };
    expect(Object.keys(body).sort()).toEqual(Object.keys(schema.properties).sort());
    // OpenAPI 3.0's boolean exclusiveMinimum as JSON Schema 2020-12 spells it; in-painting's `nullable` has no type to widen (it takes anything).
    const exclusiveBounds = (copy: Record<string, any>) => {
      for (const property of Object.values(copy.properties as Record<string, any>)) {
        if (property.exclusiveMinimum === true) property.exclusiveMinimum = property.minimum;
      }
      delete copy.properties.inpaint.nullable;
    };
    expect(providerSchemaValidator("GenerateImageRequest", exclusiveBounds)(body)).toBeNull();
    // Its own key: the image tier allows 20 requests a minute.
    const { key } = server.createKey({ usd: 10 });
    // This node's model, and a small size so the test stays quick; every other value is the provider's.
    const res = await post(server, "/image/generate", { ...body, model: "tiny-sd", width: 64, height: 64, variants: 2 }, { key });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("style_references,inpaint,disable_prompt_optimization_thinking,lora_strength,quality,resolution");
    const json = (await res.json()) as any;
    expect(json.images).toHaveLength(2);
    // Honoured: the format, the seed, the style preset (the style's prompt is applied, and the request echoed as sent).
    expect(await decodeImage(Buffer.from(json.images[0], "base64"))).toMatchObject({ format: example.format, width: 64, height: 64 });
    expect(json.request).toMatchObject({ seed: example.seed, style_preset: example.style_preset });
    // Switched on, web search and prompt enhancement are named too; a plain request names nothing.
    const switched = await generate({ width: 64, height: 64, enable_web_search: true, enhance_prompt: true }, key);
    expect(switched.status).toBe(200);
    expect(switched.headers.get("x-service-unsupported-parameters")).toBe("enable_web_search,enhance_prompt");
    const plain = await generate({ width: 64, height: 64, enable_web_search: false, enhance_prompt: false }, key);
    expect(plain.headers.get("x-service-unsupported-parameters")).toBeNull();
  });

  it("says the standard's variations are not available here, and upscaling and background removal without their models", async () => {
    const upscale = await post(server, "/image/upscale", { image: "x" });
    expect(upscale.status).toBe(404);
    expect((await json(upscale)).error).toBe("Image upscaling (POST /image/upscale) is not available on this node: no upscale model is configured.");
    const background = await post(server, "/image/background-remove", { image: "x" });
    expect(background.status).toBe(404);
    expect((await json(background)).error).toBe("Background removal (POST /image/background-remove) is not available on this node: no background-removal model is configured.");
    const variations = await post(server, "/images/variations", { image: "x" });
    expect(variations.status).toBe(404);
    expect((await json(variations)).error).toBe(
      "Image variations (POST /images/variations) is not available on this node. Hearth generates images (POST /image/generate, /images/generations) and edits them with a prompt (POST /images/edits, /image/edit).",
    );
  });

  it("keeps serving other requests while a long generation runs in a worker thread", async () => {
    const ask = () => post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 5 });
    expect((await ask()).status).toBe(200); // the chat model is loaded before the clock starts
    let imageDone = false;
    const long = generate({ width: 1024, height: 1024, steps: 30, cfg_scale: 7, seed: 9 }).then((res) => {
      imageDone = true;
      return res;
    });
    await new Promise((r) => setTimeout(r, 300));
    // The event loop answers at once, again and again, while the image is still being made.
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      expect((await fetch(`${server.baseUrl}/models`)).status).toBe(200);
      latencies.push(Date.now() - t0);
    }
    expect(Math.max(...latencies)).toBeLessThan(500);
    // Another model's inference is served too.
    expect((await ask()).status).toBe(200);
    expect(imageDone).toBe(false);
    expect((await long).status).toBe(200);
  });
});

describe("credits, limits and usage for images", () => {
  function fundedKey(usdMicros: number, overrides?: string) {
    const account = createAccount(server.db, "images");
    if (usdMicros) server.credits.grant(account.id, "USD", usdMicros, "test");
    const { secret } = createApiKey(server.db, { accountId: account.id, description: "img", keyType: "INFERENCE", rateLimitOverrides: overrides });
    return { key: secret, accountId: account.id };
  }

  it("charges per image, at the step class's price when one covers the steps", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    expect((await generate({ variants: 2, steps: 10, width: 64, height: 64 }, key)).status).toBe(200);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 2 * 10_000);
    expect((await generate({ steps: 4, width: 64, height: 64 }, key)).status).toBe(200);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 2 * 10_000 - 2_000);
    const skus = listLedgerEntries(server.db, { accountId, kind: "charge" }).map(({ sku, units }) => ({ sku, units }));
    expect(skus).toEqual([
      { sku: "tiny-sd-image-generation", units: 2 },
      { sku: "tiny-sd-image-turbo", units: 1 },
    ]);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
    expect(countReservations(server.db)).toBe(0);
    const usage = listUsage(server.db, accountId);
    expect(usage.map((u) => [u.endpoint, u.status, u.finishReason])).toEqual([
      ["/image/generate", 200, "images:2"],
      ["/image/generate", 200, "images:1"],
    ]);
  });

  it("refuses with 402 before generating when the balance cannot cover every variant", async () => {
    const { key, accountId } = fundedKey(15_000);
    const res = await generate({ variants: 2, steps: 10, width: 64, height: 64 }, key);
    expect(res.status).toBe(402);
    expect((await json(res)).code).toBe("INSUFFICIENT_BALANCE");
    expect(getBalances(server.db, accountId).USD).toBe(15_000);
  });

  it("a client that leaves mid-generation stops it and pays nothing", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    const controller = new AbortController();
    const pending = fetch(`${server.baseUrl}/image/generate`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-sd", prompt: "a long one", width: 768, height: 768, steps: 40, cfg_scale: 7 }),
      signal: controller.signal,
    }).catch(() => undefined);
    // Leave once the generation has started (a fixed delay raced it on a loaded machine).
    for (let i = 0; i < 1000 && server.models.statusOf("tiny-sd").inFlight === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(server.models.statusOf("tiny-sd").inFlight).toBe(1);
    controller.abort();
    await pending;
    let rows = listUsage(server.db, accountId);
    for (let i = 0; i < 200 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rows = listUsage(server.db, accountId);
    }
    expect(rows.map((r) => r.status)).toEqual([499]);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
    expect(countReservations(server.db)).toBe(0);
    // The worker was freed at the next step, not at the end of the 40.
    const t0 = Date.now();
    expect((await generate({ width: 64, height: 64 }, key)).status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it("applies the image rate-limit tier", async () => {
    const { key } = fundedKey(1_000_000, JSON.stringify({ image: { rpm: 2 } }));
    await server.withClockStopped(async () => {
      const first = await generate({ width: 64, height: 64 }, key);
      expect(first.headers.get("x-ratelimit-limit-requests")).toBe("2");
      expect((await generate({ width: 64, height: 64 }, key)).status).toBe(200);
      const third = await generate({ width: 64, height: 64 }, key);
      expect(third.status).toBe(429);
      expect(third.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    });
  });
});

describe("safe mode", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "hearth-safety-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("without a classifier: reported unavailable, never claimed", async () => {
    const res = await generate({ width: 64, height: 64 });
    expect(res.headers.get("x-service-is-blurred")).toBe("false");
    expect(res.headers.get("x-service-safe-mode")).toBe("unavailable");
    expect(res.headers.get("x-service-is-content-violation")).toBeNull();
    const record = (await (await fetch(`${server.baseUrl}/models/tiny-sd`)).json()) as any;
    expect(record.model_spec.supportsSafeMode).toBe(false);
    expect(record.model_spec.capabilities).not.toHaveProperty("supportsSafeMode");
    expect(record.model_spec.constraints).toMatchObject({ promptCharacterLimit: 2048, steps: { default: 4, max: 50 }, widthHeightDivisor: 8 });
  });

  it("with a classifier that flags: blurred in safe mode, flagged either way", async () => {
    const model = join(dir, "tiny-sd-checked");
    cpSync(tinySdPath(), model, { recursive: true });
    await writeSafetyCheckerModel(join(model, "safety_checker"), { verdict: "flag" });
    const passing = join(dir, "checker-pass");
    await writeSafetyCheckerModel(passing, { verdict: "pass" });
    const checked = await startTestServer({
      models: [tinyImageEntry({ id: "checked", file: model }), tinyImageEntry({ id: "passing", image: { safetyChecker: passing } })],
    });
    try {
      const record = (await (await fetch(`${checked.baseUrl}/models/checked`)).json()) as any;
      expect(record.model_spec.supportsSafeMode).toBe(true);
      const body = { model: "checked", prompt: "a cat", width: 128, height: 128, seed: 1, format: "png" };
      const safe = await post(checked, "/image/generate", body);
      expect(safe.headers.get("x-service-is-blurred")).toBe("true");
      expect(safe.headers.get("x-service-is-content-violation")).toBe("true");
      expect(safe.headers.get("x-service-safe-mode")).toBeNull();
      const unsafe = await post(checked, "/image/generate", { ...body, safe_mode: false });
      expect(unsafe.headers.get("x-service-is-blurred")).toBe("false");
      expect(unsafe.headers.get("x-service-is-content-violation")).toBe("true");
      // Blurring smooths the image: neighbouring pixels differ much less.
      const roughness = async (res: Response) => {
        const { rgb, width } = await decodeImage(Buffer.from(((await res.json()) as any).images[0], "base64"));
        let sum = 0;
        for (let i = 3; i < rgb.length; i++) if (i % (width * 3) >= 3) sum += Math.abs(rgb[i]! - rgb[i - 3]!);
        return sum / rgb.length;
      };
      expect(await roughness(safe)).toBeLessThan((await roughness(unsafe)) / 3);

      const clean = await post(checked, "/image/generate", { ...body, model: "passing" });
      expect(clean.headers.get("x-service-is-blurred")).toBe("false");
      expect(clean.headers.get("x-service-is-content-violation")).toBe("false");
      // The standard endpoint: moderation "low" turns safe mode off.
      const low = await post(checked, "/images/generations", { model: "checked", prompt: "a cat", size: "256x256", moderation: "low" });
      expect(low.headers.get("x-service-is-blurred")).toBe("false");
    } finally {
      await checked.stop();
    }
  });
});
