import { binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./upscaleSchema.js";

export const upscaleApi = defineApiGroup({
  tag: "Images",
  description: "Super-resolution with local upscale models.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/image/upscale",
      operationId: "upscaleImage",
      summary: "Upscale an image",
      description:
        "The picture 2 or 4 times larger on each side, by the node's upscale model (or `model`), run in tiles so a large picture never needs the model's memory for the whole of it. " +
        "A model with a fixed factor of 2 runs twice for 4. A result past the model's pixel limit (16,777,216 by default) is scaled by the largest factor that fits; a picture that cannot grow at all is a 413. " +
        "`creativity` is accepted but not honoured by super-resolution models (named in `x-service-unsupported-parameters`). Priced per picture at the model's 2x or 4x price.",
      access: "paid",
      body: {
        content: {
          "application/json": schemas.UpscaleImageRequest,
          "multipart/form-data": { fields: schemas.UpscaleImageRequest, files: { image: "The picture (any format sharp reads)" } },
        },
      },
      responses: { 200: { description: "The upscaled picture", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: { "image/png": binary("PNG") } } },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404], 413: "The upload is too large, or the picture too large to upscale" },
    },
  ],
});
