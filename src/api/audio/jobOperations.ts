import { SPEECH_FORMATS } from "../../config/backendSettings.js";
import { binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./jobSchema.js";
import { SPEECH_CONTENT_TYPES } from "./schema.js";

const audioFiles = Object.fromEntries([...new Set(SPEECH_FORMATS.map((format) => SPEECH_CONTENT_TYPES[format]))].map((type) => [type, binary("The finished audio")]));

export const audioJobsApi = defineApiGroup({
  tag: "Audio",
  description: "Long speech and music as durable jobs: quote, queue, poll with retrieve, then complete to delete the media.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/audio/quote",
      operationId: "quoteAudio",
      summary: "Price an audio job",
      description:
        "Speech models are priced per character: `character_count` is required for a priced one (an unpriced one quotes 0), and `duration_seconds` is a 400 on them. " +
        "Music models are priced for `duration_seconds` (default: the model's `default_duration`); outside the model's durations it is a 400, and `character_count` is a 400 on them.",
      access: "paid",
      body: { content: { "application/json": schemas.QuoteAudioRequest } },
      responses: { 200: { description: "The price in USD", content: { "application/json": schemas.QuoteAudioResponse } } },
      errors: { 404: INFERENCE_ERRORS[404] },
    },
    {
      method: "post",
      path: "/audio/queue",
      operationId: "queueAudio",
      summary: "Queue long speech or a music clip",
      description:
        `A local text-to-speech model reads \`prompt\` (up to ${schemas.AUDIO_JOB_MAX_CHARACTERS} characters) sentence by sentence into one file, with \`voice\` (a cloned voice too), ` +
        `\`language_code\` and \`speed\`; the music fields (${schemas.MUSIC_ONLY_FIELDS.join(", ")}) are a 400 naming each on a speech model. ` +
        "A local text-to-music model plays `prompt` (up to its `prompt_character_limit`) for `duration_seconds` (default: its `default_duration`); `loop` makes the end run on into the start " +
        `where the model reports \`supports_loop\`; \`force_instrumental\` always holds (no vocals); \`lyrics_prompt\`, \`lyrics_optimizer: true\` and the speech fields (${schemas.SPEECH_ONLY_FIELDS.join(", ")}) are a 400 naming each. ` +
        "The whole price is charged when the job is queued (cost headers) and refunded once if it fails; the job survives restarts. Hearth extension: `response_format` (default: the model's `default_format`).",
      access: "paid",
      body: { content: { "application/json": schemas.QueueAudioRequest } },
      responses: { 200: { description: "The job's queue id", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: { "application/json": schemas.QueueAudioResponse } } },
      errors: { 403: INFERENCE_ERRORS[403], 404: INFERENCE_ERRORS[404] },
    },
    {
      method: "post",
      path: "/audio/retrieve",
      operationId: "retrieveAudio",
      summary: "Poll an audio job, or download the finished audio",
      access: "paid",
      body: { content: { "application/json": schemas.RetrieveAudioRequest } },
      responses: {
        200: {
          description: "While the job runs, its status (JSON); once done, the audio itself",
          headers: INFERENCE_HEADERS,
          content: { "application/json": schemas.AudioStatusResponse, ...audioFiles },
        },
      },
      errors: {
        403: INFERENCE_ERRORS[403],
        404: "No such job for this caller and model",
        500: "The generation failed (`code` AUDIO_GENERATION_FAILED, `status` FAILED, `credits_refunded`)",
      },
    },
    {
      method: "post",
      path: "/audio/complete",
      operationId: "completeAudio",
      summary: "Delete a finished audio job's media",
      access: "paid",
      body: { content: { "application/json": schemas.CompleteAudioRequest } },
      responses: { 200: { description: "Deleted", content: { "application/json": schemas.CompleteAudioResponse } } },
      errors: { 400: "The job is still processing (`queue_id`)", 403: INFERENCE_ERRORS[403], 404: "No such job for this caller and model" },
    },
  ],
});
