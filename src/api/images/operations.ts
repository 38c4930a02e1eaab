import { IMAGE_FORMATS } from "../../media/image.js";
import { ACCEPT_ENCODING_HEADER, binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const SAFETY_HEADERS = {
  "x-service-is-blurred": "Whether safe mode blurred an image",
  "x-service-is-content-violation": "Whether the safety classifier flagged an image",
  "x-service-safe-mode": '"unavailable" when safe mode was asked for but the model has no safety classifier',
  "x-service-unsupported-parameters": "Fields accepted but not honoured on this node, comma-separated (style_references, enable_web_search, background ...)",
};

const imageBytes = Object.fromEntries(Object.values(IMAGE_FORMATS).map((type) => [type, binary("The image (return_binary: true)")]));

export const imagesApi = defineApiGroup({
  tag: "Images",
  description: "Text-to-image generation, in the reference's shape (/image/generate) and the chat-completions standard's (/images/generations).",
  schemas,
  operations: [
    {
      method: "post",
      path: "/image/generate",
      operationId: "generateImage",
      summary: "Generate images",
      access: "paid",
      headers: ACCEPT_ENCODING_HEADER,
      body: { content: { "application/json": schemas.GenerateImageRequest } },
      responses: {
        200: {
          description: "Base64 images, or with `return_binary: true` the image itself",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS, ...SAFETY_HEADERS },
          content: { "application/json": schemas.GenerateImageResponse, ...imageBytes },
        },
      },
      errors: INFERENCE_ERRORS,
    },
    {
      method: "post",
      path: "/images/generations",
      operationId: "simpleGenerateImage",
      summary: "Generate an image (chat-completions standard)",
      description: "A model this node does not have (an OpenAI model name, say) means the default image model. `url` results are data URLs.",
      access: "paid",
      headers: ACCEPT_ENCODING_HEADER,
      body: { content: { "application/json": schemas.SimpleGenerateImageRequest } },
      responses: {
        200: {
          description: "The image",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS, ...SAFETY_HEADERS },
          content: { "application/json": schemas.SimpleGenerateImageResponse },
        },
      },
      errors: INFERENCE_ERRORS,
    },
    {
      method: "get",
      path: "/image/styles",
      operationId: "listImageStyles",
      summary: "List image style presets",
      access: "public",
      responses: { 200: { description: "Style preset names for `style_preset`", content: { "application/json": schemas.ImageStylesResponse } } },
    },
  ],
});
