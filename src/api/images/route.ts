import { type Request, Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import type { Cost } from "../../billing/credits.js";
import { backgroundRemovalCost, imageCost } from "../../billing/pricing.js";
import { InvalidRequestError, NotFoundError } from "../../errors.js";
import { readMultipart } from "../../http/multipart.js";
import { EditImageRequest, MultiEditImageRequest, StandardEditImageRequest } from "./editSchema.js";
import { decodeBase64Field, type ImageSource, readImageInput } from "./imageInput.js";
import { metered, type MeteredRequest } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { IMAGE_FORMATS } from "../../media/image.js";
import { GenerateImageRequest, SimpleGenerateImageRequest, UNAVAILABLE_IMAGE_OPERATIONS, type GenerateImageResponse, type SimpleGenerateImageResponse } from "./schema.js";
import { ImageService, type ImageOutcome, type ImagePlan } from "./service.js";
import { ImageStyles } from "./styles.js";

export type ImagesRouterDeps = Pick<AppDeps, "config" | "models" | "credits" | "limits" | "db" | "authenticate" | "jsonBody" | "multipartBody">;

export function imagesRouter(deps: ImagesRouterDeps): Router {
  const styles = ImageStyles.load(deps.config.configPath);
  const service = new ImageService(deps.models, styles, deps.config.requestTimeoutMs);
  const router = Router();

  for (const [path, operation] of Object.entries(UNAVAILABLE_IMAGE_OPERATIONS)) {
    router.post(path, () => {
      throw new NotFoundError(
        `${operation} (POST ${path}) is not available on this node. Hearth generates images (POST /image/generate, /images/generations) and edits them with a prompt (POST /images/edits, /image/edit).`,
      );
    });
  }

  router.get("/image/styles", (_req, res) => {
    res.json({ object: "list", data: styles.names() });
  });

  /**
   * The shared part of both generation endpoints, inside the metered request: rate limit (image
   * tier), credit hold for every image, generation off the event loop, settlement, safety headers.
   */
  async function generate(plan: ImagePlan, paid: MeteredRequest): Promise<ImageOutcome & { cost: Cost }> {
    paid.admit(plan.entry, "image");
    paid.record(plan.entry.id);
    if (plan.unsupported.length > 0) paid.res.set("x-service-unsupported-parameters", plan.unsupported.join(","));
    const meter = paid.meterFor(plan.entry.id);
    // A transparent background is one cut-out per image, at the background-removal model's price.
    const lines = (images: number) => [
      ...imageCost(plan.entry, { images, steps: plan.steps }),
      ...(plan.transparentWith ? backgroundRemovalCost(plan.transparentWith, images) : []),
    ];
    meter.reserve(lines(plan.variants));
    const { engine } = paid.hold(await service.acquire(plan));
    const remover = plan.transparentWith ? paid.hold(await deps.models.acquire(plan.transparentWith.id, "background")).engine : undefined;
    paid.serve(plan.entry, engine.router);
    const outcome = await service.generate(plan, engine, paid.signal, remover);
    const images = outcome.files.length;
    const cost = meter.settle(lines(images));
    paid.usage = { finishReason: `images:${images}` };
    const res = paid.res;
    res.set(costHeaders(cost));
    res.setHeader("x-service-is-blurred", String(outcome.blurred));
    if (outcome.flagged !== null) res.setHeader("x-service-is-content-violation", String(outcome.flagged));
    // Safe mode needs a classifier: without one, say so instead of implying images were checked.
    if (plan.safeMode && !engine.safetyChecker) res.setHeader("x-service-safe-mode", "unavailable");
    return { ...outcome, cost };
  }

  router.post("/image/generate", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/image/generate" }, async (paid) => {
      requireJson(req);
      const body = parse(GenerateImageRequest, req.body);
      const plan = service.planGenerate(body);
      const outcome = await generate(plan, paid);
      if (body.return_binary) {
        res.type(IMAGE_FORMATS[plan.format]).send(outcome.files[0]);
        return;
      }
      const ctx = res.locals.ctx;
      const response: GenerateImageResponse = {
        id: `generate-image-${ctx.requestId}`,
        images: outcome.files.map((file) => file.toString("base64")),
        request: { ...body, seed: plan.seed },
        timing: {
          inferenceDuration: Math.round(outcome.result.inferenceMs),
          inferencePreprocessingTime: Math.round(outcome.result.preprocessMs),
          inferenceQueueTime: Math.round(outcome.result.queueMs),
          total: Date.now() - ctx.startedAt,
        },
        cost: outcome.cost,
      };
      res.json(response);
    }),
  );

  /** The pictures of an edit: multipart files (`image` or `images`, and `mask`) or JSON strings (base64, data: or http(s) URLs). */
  async function editInputs(req: Request, paid: MeteredRequest, multi: boolean) {
    let body: EditImageRequest | MultiEditImageRequest;
    let uploads: Buffer[] = [];
    let maskUpload: Buffer | undefined;
    if (req.is("multipart/form-data")) {
      const form = readMultipart(req);
      const fields = form.textFields();
      const files = form.parts.filter((part) => part.filename !== undefined && (part.name === (multi ? "images" : "image") || part.name === `${multi ? "images" : "image"}[]`));
      uploads = files.map((part) => part.data);
      maskUpload = form.file("mask")?.data;
      // Text fields that name pictures (base64 or URLs) stay in the body.
      body = multi ? parse(MultiEditImageRequest, { ...fields, images: form.fields("images").length ? form.fields("images") : undefined }) : parse(EditImageRequest, fields);
    } else {
      requireJson(req);
      body = multi ? parse(MultiEditImageRequest, req.body) : parse(EditImageRequest, req.body);
    }
    // The model first: a node without one says so before any picture is read.
    const entry = service.editModel(body);
    const sources = multi
      ? [...uploads.map((upload) => ({ upload })), ...((body as MultiEditImageRequest).images ?? []).map(imageSource)]
      : uploads.length
        ? [{ upload: uploads[0] }]
        : (body as EditImageRequest).image
          ? [imageSource((body as EditImageRequest).image!)]
          : [];
    if (sources.length === 0) throw InvalidRequestError.forField([multi ? "images" : "image"], "a picture to edit is required");
    // Stable Diffusion edits one picture: a request with more than the model takes is refused, naming the field.
    if (sources.length > 1) throw InvalidRequestError.forField(["images"], `this node's image models edit one picture at a time; got ${sources.length}`);
    const picture = await readImageInput(sources[0]!, deps.config, paid.signal, paid.ctx.holdBytes);
    const mask = maskUpload ?? (body.mask !== undefined ? await decodeBase64Field(body.mask, "mask") : undefined);
    return { entry, body, picture, mask };
  }

  for (const [path, multi] of [
    ["/image/edit", false],
    ["/image/multi-edit", true],
  ] as const) {
    router.post(path, deps.authenticate, deps.multipartBody, deps.jsonBody, (req, res) =>
      metered(deps, res, { endpoint: path }, async (paid) => {
        const { entry, body, picture, mask } = await editInputs(req, paid, multi);
        const plan = await service.planEdit(entry, body, picture, mask);
        const outcome = await generate(plan, paid);
        res.type(IMAGE_FORMATS[plan.format]).send(outcome.files[0]);
      }),
    );
  }

  router.post("/images/generations", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/images/generations" }, async (paid) => {
      requireJson(req);
      const body = parse(SimpleGenerateImageRequest, req.body);
      const plan = service.planSimple(body);
      paid.attribute({ user: body.user });
      const outcome = await generate(plan, paid);
      res.json(standardImagesResponse(plan, outcome.files, body.response_format, res.locals.ctx.startedAt));
    }),
  );

  router.post("/images/edits", deps.authenticate, deps.multipartBody, (req, res) =>
    metered(deps, res, { endpoint: "/images/edits" }, async (paid) => {
      const form = readMultipart(req);
      const body = parse(StandardEditImageRequest, form.textFields());
      paid.attribute({ user: body.user });
      const uploads = form.parts.filter((part) => part.filename !== undefined && (part.name === "image" || part.name === "image[]"));
      if (uploads.length === 0) throw InvalidRequestError.forField(["image"], "a picture to edit is required (the file part image)");
      // Stable Diffusion edits one picture: more is refused, naming the field.
      if (uploads.length > 1) throw InvalidRequestError.forField(["image"], `this node's image models edit one picture at a time; got ${uploads.length}`);
      // The model first: a node without one says so before the picture is read.
      const entry = service.standardEditModel(body);
      const picture = await readImageInput({ upload: uploads[0]!.data }, deps.config, paid.signal);
      const plan = await service.planStandardEdit(entry, body, picture, form.file("mask")?.data);
      const outcome = await generate(plan, paid);
      res.json(standardImagesResponse(plan, outcome.files, body.response_format, res.locals.ctx.startedAt));
    }),
  );

  return router;
}

/** The standard's images answer: base64, or for response_format url a data URL (Hearth keeps no image store to link to). */
function standardImagesResponse(plan: ImagePlan, files: readonly Buffer[], responseFormat: "url" | "b64_json" | null | undefined, startedAt: number): SimpleGenerateImageResponse {
  const contentType = IMAGE_FORMATS[plan.format];
  return {
    created: Math.floor(startedAt / 1000),
    data: files.map((file) => (responseFormat === "url" ? { url: `data:${contentType};base64,${file.toString("base64")}` } : { b64_json: file.toString("base64") })),
  };
}

/** A picture named in JSON: an http(s) URL, or base64 (a data: URL too). */
function imageSource(value: string): ImageSource {
  return /^https?:\/\//i.test(value) ? { url: value } : { base64: value };
}
