import { ACCOUNT_RATE_LIMIT_HEADERS } from "../billing/operations.js";
import { z } from "zod";
import { BALANCE_HEADERS, binary, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS, MODEL_HEADERS, text } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const audioBytes = Object.fromEntries(
  [...new Set(Object.values(schemas.SPEECH_CONTENT_TYPES))].map((type) => [
    type,
    binary(type === "audio/pcm" ? `16-bit little-endian mono PCM at ${schemas.PCM_SAMPLE_RATE} Hz` : "The audio"),
  ]),
);

export const audioApi = defineApiGroup({
  tag: "Audio",
  description: "Text to speech, speech to text, and cloned voices.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/audio/speech",
      operationId: "createSpeech",
      summary: "Synthesise speech",
      description:
        'Answers the audio bytes in `response_format`. `streaming: true` (or the standard\'s `stream_format: "audio"`) sends the audio as it is synthesised, chunked, with the charged cost as HTTP trailers. `stream_format: "sse"` sends it as server-sent events: `speech.audio.delta` (base64 pieces of the encoded stream in `response_format`), then `speech.audio.done` with the usage and the charged `cost`. `instructions` is accepted as an alias of `prompt`. `model` may be one of the standard\'s names (`tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`: the node\'s default speech model unless a model lists it in `aliases`) and `voice` one of the standard\'s voices (`alloy`, `onyx`, ...: GET /models shows each model\'s `voice_aliases`); a `{ "id": ... }` voice object is read as its id.',
      access: "paid",
      body: { content: { "application/json": schemas.SpeechRequest } },
      responses: {
        200: {
          description: 'The audio, or with `stream_format: "sse"` its events',
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS },
          content: {
            ...audioBytes,
            "text/event-stream": {
              sse: z.union([schemas.SpeechAudioDelta, schemas.SpeechAudioDone]),
              description:
                '`data: <event JSON>` events: speech.audio.delta, then speech.audio.done, then `data: [DONE]`. An error after the first event arrives as `data: {"error": ...}` before `[DONE]`.',
            },
          },
        },
      },
      errors: { ...INFERENCE_ERRORS, 502: "The upstream speech server refused this node or failed" },
    },
    {
      method: "post",
      path: "/video/transcriptions",
      operationId: "createVideoTranscription",
      summary: "Transcribe a video's audio",
      description:
        "JSON `{ url }` (the provider's form): the node fetches the file at the URL, a direct link to a video or audio file (it does not download " +
        "from video sites' web pages), only when the operator allows fetching (--web-scraping on; any address the node reaches, LAN included), " +
        "up to --max-upload-mb. This node also takes the file itself as multipart/form-data (`file`, `response_format`, `model`, `language`). " +
        "ffmpeg takes the audio track; the node's default speech-to-text model (or `model`) transcribes it, billed per audio second.",
      access: "paid",
      body: {
        content: {
          "application/json": schemas.VideoTranscriptionRequest,
          "multipart/form-data": { fields: schemas.VideoTranscriptionFields, files: { file: "The video or audio file (any format ffmpeg decodes)" } },
        },
      },
      responses: {
        200: {
          description: "The transcript",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS },
          content: { "application/json": schemas.VideoTranscriptionResponse, "text/plain": text("response_format text: the transcript") },
        },
      },
      errors: {
        ...INFERENCE_ERRORS,
        413: "The file is larger than --max-upload-mb",
        415: "The file has no audio ffmpeg can decode",
        422: "The URL could not be fetched (the reason is in the message)",
        503: "Fetching by URL is not enabled on this node (--web-scraping on), or the model is at capacity",
      },
    },
    {
      method: "post",
      path: "/audio/transcriptions",
      operationId: "createTranscription",
      summary: "Transcribe audio",
      description:
        "`response_format` json and verbose_json answer JSON; text and srt answer text/plain, vtt text/vtt. verbose_json segments carry Whisper's decoder statistics (tokens, avg_logprob, compression_ratio, no_speech_prob, temperature, seek). `stream: true` answers server-sent events: `transcript.text.delta` as each segment is decoded, then `transcript.text.done` with the whole text, the usage and the charged `cost`; a stream cut short is charged once, for the audio covered by the segments decoded before it stopped. `model` may be one of the standard's names (`whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`). Without `language` the model detects it.",
      access: "paid",
      body: { content: { "multipart/form-data": { fields: schemas.TranscriptionRequest, files: { file: "The audio (any format ffmpeg decodes)" } } } },
      responses: {
        200: {
          description: "The transcription",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS },
          content: {
            "application/json": z.union([schemas.TranscriptionResponse, schemas.VerboseTranscriptionResponse]),
            "text/plain": text("response_format text (the transcript) or srt (SubRip subtitles)"),
            "text/vtt": text("response_format vtt (WebVTT subtitles)"),
            "text/event-stream": {
              sse: z.union([schemas.TranscriptTextDelta, schemas.TranscriptTextDone]),
              description:
                'With `stream: true`: transcript.text.delta events, then transcript.text.done, then `data: [DONE]`. An error after the first event arrives as `data: {"error": ...}` before `[DONE]`.',
            },
          },
        },
      },
      errors: { ...INFERENCE_ERRORS, 415: "The upload is not audio ffmpeg can decode" },
    },
    {
      method: "post",
      path: "/audio/translations",
      operationId: "createTranslation",
      summary: "Translate audio into English text",
      description:
        "Whisper's translate task: speech in any language it knows to English text, in the same formats as transcriptions (`task` is `translate` in verbose_json), billed and rate-limited as transcriptions. `language` is an optional hint about the spoken language. English-only models answer 400 naming `model`.",
      access: "paid",
      body: { content: { "multipart/form-data": { fields: schemas.TranslationRequest, files: { file: "The audio (any format ffmpeg decodes)" } } } },
      responses: {
        200: {
          description: "The English text",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS },
          content: {
            "application/json": z.union([schemas.TranscriptionResponse, schemas.VerboseTranscriptionResponse]),
            "text/plain": text("response_format text (the translation) or srt (SubRip subtitles)"),
            "text/vtt": text("response_format vtt (WebVTT subtitles)"),
          },
        },
      },
      errors: { ...INFERENCE_ERRORS, 415: "The upload is not audio ffmpeg can decode" },
    },
    {
      method: "post",
      path: "/audio/voices",
      operationId: "createClonedVoice",
      summary: "Clone a voice",
      description: "Derives a voice from a sample; use the returned id as `voice` in /audio/speech with the same model.",
      access: "paid",
      body: { content: { "multipart/form-data": { fields: schemas.CreateVoiceRequest, files: { file: "A voice sample (a few seconds of clean speech)" } } } },
      responses: { 200: { description: "The voice handle", content: { "application/json": schemas.CreateVoiceResponse } } },
      errors: { ...INFERENCE_ERRORS, 415: "The upload is not audio ffmpeg can decode" },
    },
    {
      method: "get",
      path: "/audio/voices",
      operationId: "listVoices",
      summary: "List the caller's cloned voices",
      access: "paid",
      responses: {
        200: { description: "The voices", headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, ...MODEL_HEADERS, ...BALANCE_HEADERS }, content: { "application/json": schemas.VoiceList } },
      },
    },
    {
      method: "delete",
      path: "/audio/voices/{id}",
      operationId: "deleteVoice",
      summary: "Delete a cloned voice",
      access: "paid",
      params: z.object({ id: z.string() }),
      responses: {
        200: {
          description: "Deleted",
          headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, ...MODEL_HEADERS, ...BALANCE_HEADERS },
          content: { "application/json": schemas.DeleteVoiceResponse },
        },
      },
      errors: { 404: "No such voice" },
    },
  ],
});
