import { ACCOUNT_RATE_LIMIT_HEADERS } from "../billing/operations.js";
import { binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS, MODEL_HEADERS, RATE_LIMIT_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const videoApi = defineApiGroup({
  tag: "Video",
  description: "Text-to-video as durable jobs: quote, queue, poll with retrieve, then complete to delete the media.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/video/quote",
      operationId: "quoteVideo",
      summary: "Price a video",
      access: "paid",
      body: { content: { "application/json": schemas.QuoteVideoRequest } },
      responses: {
        200: {
          description: "The price in USD",
          headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, "x-service-unsupported-parameters": "Fields accepted but not honoured here, comma-separated" },
          content: { "application/json": schemas.QuoteVideoResponse },
        },
      },
      errors: { 404: INFERENCE_ERRORS[404] },
    },
    {
      method: "post",
      path: "/video/queue",
      operationId: "queueVideo",
      summary: "Queue a video generation",
      description: `The credit is held when the job is queued and refunded when it fails. Inputs a text-to-video model has no use for (${schemas.UNSUPPORTED_VIDEO_INPUTS.join(", ")}) are refused with a 400 naming them; \`audio: true\`, \`upscale_factor\` and \`omni_reference_task_type\` are accepted and named in \`x-service-unsupported-parameters\` (the models make silent video and do not upscale).`,
      access: "paid",
      body: { content: { "application/json": schemas.QueueVideoRequest } },
      responses: {
        200: {
          description: "The job's queue id",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS, "x-service-unsupported-parameters": "Fields accepted but not honoured here, comma-separated" },
          content: { "application/json": schemas.QueueVideoResponse },
        },
      },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404] },
    },
    {
      method: "post",
      path: "/video/retrieve",
      operationId: "retrieveVideo",
      summary: "Poll a video job, or download the finished video",
      access: "paid",
      body: { content: { "application/json": schemas.RetrieveVideoRequest } },
      responses: {
        200: {
          description: "While the job runs, its status (JSON); once done, the video itself",
          headers: { ...MODEL_HEADERS, ...RATE_LIMIT_HEADERS },
          content: { "application/json": schemas.VideoStatusResponse, "video/mp4": binary("The finished video") },
        },
      },
      errors: {
        403: INFERENCE_ERRORS[403],
        404: "No such job for this caller and model",
        500: "The generation failed (`code` VIDEO_GENERATION_FAILED, `status` FAILED, `credits_refunded`)",
      },
    },
    {
      method: "post",
      path: "/video/complete",
      operationId: "completeVideo",
      summary: "Delete a finished video's media",
      access: "paid",
      body: { content: { "application/json": schemas.CompleteVideoRequest } },
      responses: { 200: { description: "Deleted", content: { "application/json": schemas.CompleteVideoResponse } } },
      errors: { 403: INFERENCE_ERRORS[403], 404: "No such job for this caller and model" },
    },
  ],
});
