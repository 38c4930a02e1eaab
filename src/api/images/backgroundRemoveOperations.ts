import { binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./backgroundRemoveSchema.js";

export const backgroundRemoveApi = defineApiGroup({
  tag: "Images",
  description: "Background removal with local matting models.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/image/background-remove",
      operationId: "backgroundRemoveImage",
      summary: "Remove an image's background",
      description:
        "The picture as a PNG with an alpha channel from the node's background-removal model (MODNet, BiRefNet, ISNet or RMBG-style ONNX exports; `model` picks one): " +
        "transparent where the background was. The image comes as a multipart file, base64 (or a data: URL) in `image`, or `image_url`, which the node fetches only when the operator allows fetching (--web-scraping on; 503 otherwise). " +
        "Priced per picture at the model's `generation` price; the image rate-limit class applies. A node without such a model answers 404 saying so.",
      access: "paid",
      body: {
        content: {
          "application/json": schemas.BackgroundRemoveImageRequest,
          "multipart/form-data": { fields: schemas.BackgroundRemoveImageRequest, files: { image: "The picture (any format sharp reads)" } },
        },
      },
      responses: {
        200: { description: "The picture with its background transparent", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: { "image/png": binary("PNG with alpha") } },
      },
      errors: {
        403: INFERENCE_ERRORS[403],
        404: "No background-removal model on this node, or no such model",
        413: "The upload is too large",
        422: "image_url could not be fetched",
        503: "image_url given but fetching is off",
      },
    },
  ],
});
