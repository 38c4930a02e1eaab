import { IMAGE_FORMATS } from "../../media/image.js";
import { binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./editSchema.js";
import { SimpleGenerateImageResponse } from "./schema.js";

const edited = Object.fromEntries(Object.values(IMAGE_FORMATS).map((type) => [type, binary("The edited picture")]));
const description =
  "Prompt-driven image-to-image on the node's Stable Diffusion model (or `model`): the picture is encoded by the model's VAE encoder, noised to `strength` (a Hearth extension, 0 to 1; default 0.75, or 1 for a masked edit on an inpaint model) and denoised toward the prompt. " +
  "Without `model`, the node's default inpaint model edits (else its default image model); an inpainting export (a UNet with 9 input channels) is fed the mask and the masked picture as it was trained to be. " +
  "The result keeps the picture's aspect ratio on the model's size grid (or `aspect_ratio`, cropping the centre). `mask` (a Hearth extension: a picture of the same size, white or transparent where to repaint; a file part or base64) limits the change: the rest keeps the picture's own pixels. " +
  "`output_format` png (default), jpeg or webp. `enhance_prompt`, `disable_prompt_optimization_thinking`, `resolution` (and `quality` on multi-edit) are named in `x-service-unsupported-parameters`. " +
  "Priced as one generated image; the image rate-limit class applies. A model whose export has no vae_encoder answers 400 naming `model`.";

export const editApi = defineApiGroup({
  tag: "Images",
  description: "Image editing with local diffusion models.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/image/edit",
      operationId: "editImage",
      summary: "Edit an image",
      description: `${description} The picture: the file part \`image\`, or \`image\` as base64, a data: URL or an http(s) URL (fetched only under --web-scraping on).`,
      access: "paid",
      body: {
        content: {
          "application/json": schemas.EditImageRequest,
          "multipart/form-data": { fields: schemas.EditImageRequest, files: { image: "The picture to edit", mask: "Where to repaint (white or transparent)" } },
        },
      },
      responses: { 200: { description: "The edited picture", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: edited } },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404], 413: "The upload is too large" },
    },
    {
      method: "post",
      path: "/image/multi-edit",
      operationId: "multiEditImage",
      summary: "Edit an image (multi-image form)",
      description: `${description} The reference's multi-image form: \`images\` (file parts or strings). This node's diffusion models edit one picture: more than one is a 400 naming \`images\`.`,
      access: "paid",
      body: {
        content: {
          "application/json": schemas.MultiEditImageRequest,
          "multipart/form-data": { fields: schemas.MultiEditImageRequest, files: { images: "The picture to edit", mask: "Where to repaint (white or transparent)" } },
        },
      },
      responses: { 200: { description: "The edited picture", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: edited } },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404], 413: "The upload is too large" },
    },
    {
      method: "post",
      path: "/images/edits",
      operationId: "simpleEditImage",
      summary: "Edit an image (chat-completions standard)",
      description:
        "The standard's edit, as the openai client's `images.edit` sends it: the file part `image` (one picture; `image[]` is read too), an optional `mask` file (transparent, or white, where to repaint; the picture's size) and the text fields. " +
        "A `model` this node does not have (an OpenAI model name, say) means the default edit model: the default inpaint model, else the default image model. " +
        "`size` is the result's exact size, within the model's largest and on its size grid (a 400 naming `size` otherwise; the picture is cropped to its aspect ratio); `auto` or none keeps the picture's aspect ratio on the model's size grid. " +
        "`n` is 1; `output_format`, `output_compression` and `background: transparent` work as on /images/generations; `quality` other than auto and `input_fidelity` are named in `x-service-unsupported-parameters`; `stream: true` is a 400 naming `stream`. " +
        "`url` results are data URLs. Priced as one generated image; the image rate-limit class applies.",
      access: "paid",
      body: {
        content: {
          "multipart/form-data": { fields: schemas.StandardEditImageRequest, files: { image: "The picture to edit", mask: "Where to repaint (transparent or white)" } },
        },
      },
      responses: {
        200: { description: "The edited picture", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: { "application/json": SimpleGenerateImageResponse } },
      },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404], 413: "The upload is too large" },
    },
  ],
});
