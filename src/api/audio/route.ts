import { type Request, type Response, Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { uploadByteLimit } from "../../http/bodyLimits.js";
import { CLIENT_CLOSED_REQUEST } from "../../http/clientClosedRequest.js";
import { metered, type MeteredRequest } from "../../http/meteredRequest.js";
import { readMultipart } from "../../http/multipart.js";
import { parse, requireJson } from "../../http/parse.js";
import type { SseStream } from "../../http/sse.js";
import { ApiError, PayloadTooLargeError } from "../../errors.js";
import type { MultipartPart } from "../../http/multipart.js";
import { fetchFile } from "../../search/fetchFile.js";
import { CreateVoiceRequest, SpeechRequest, TranscriptionRequest, TranslationRequest, VideoTranscriptionFields, VideoTranscriptionRequest } from "./schema.js";
import { SpeechService, type PreparedSpeech } from "./SpeechService.js";
import { streamUsage, TranscriptionService } from "./TranscriptionService.js";
import { toVoiceRecord, VoiceService } from "./VoiceService.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { setModelHeaders } from "../../http/modelHeaders.js";

// Binary and plain-text responses carry their cost in headers (JSON bodies also have a `cost`
// field). A streamed speech response announces the cost of the whole input up front and sends
// what was actually charged as HTTP trailers of the same names.

export type AudioRouterDeps = Pick<AppDeps, "config" | "models" | "db" | "now" | "credits" | "limits" | "authenticate" | "jsonBody" | "multipartBody">;

export function audioRouter(deps: AudioRouterDeps): Router {
  const maxUploadBytes = uploadByteLimit(deps.config);
  const speech = new SpeechService(deps.models, deps.db, deps.now, deps.config.requestTimeoutMs);
  const transcription = new TranscriptionService(deps.models, deps.config.requestTimeoutMs, maxUploadBytes);
  const voices = new VoiceService(deps.models, deps.db, deps.config.dataDir, deps.now, maxUploadBytes);
  const meterFor = (paid: MeteredRequest) => (entry: { id: string }) => paid.meterFor(entry.id);

  const router = Router();

  router.post("/audio/speech", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/audio/speech" }, async (paid) => {
      requireJson(req);
      const body = parse(SpeechRequest, req.body);
      const prepared = await speech.prepare(body, paid.ctx.auth?.accountId, meterFor(paid));
      paid.hold(prepared.lease);
      paid.serve(prepared.entry, prepared.engine.router);
      paid.admit(prepared.entry, "audio");
      speech.reserve(prepared);
      paid.record(prepared.entry.id);
      paid.onExit(({ status, failed, delivered }) => {
        // Nothing delivered: nothing charged. Otherwise what was synthesised (a no-op when already settled).
        if (failed && !delivered) prepared.meter.settle([]);
        speech.settle(prepared);
        const outcome = speech.outcome(prepared);
        paid.usage = {
          characters: status === 200 || delivered ? outcome.characters : 0,
          audioSeconds: outcome.audioSeconds,
          finishReason: outcome.completed ? "stop" : status === CLIENT_CLOSED_REQUEST ? "abort" : null,
        };
      });

      if (prepared.events) await streamSpeechEvents(paid, speech, prepared);
      else if (prepared.streaming) await streamSpeech(paid, speech, prepared);
      else {
        const { audio, contentType, cost } = await speech.complete(prepared, paid.signal);
        res.set({
          "Content-Type": contentType,
          "Content-Length": String(audio.length),
          "Content-Disposition": `inline; filename="speech.${prepared.format}"`,
          ...costHeaders(cost),
        });
        res.end(audio);
      }
    }),
  );

  /**
   * Transcriptions and translations: one handler, billed and limited the same way. A stream
   * (transcriptions, stream: true) sends each segment's text as it is decoded; cut short, it is
   * charged for the audio its segments covered.
   */
  const transcribe = (endpoint: "/audio/transcriptions" | "/audio/translations") => (req: Request, res: Response) =>
    metered(deps, res, { endpoint }, async (paid) => {
      const form = readMultipart(req);
      const task = endpoint === "/audio/translations" ? "translate" : "transcribe";
      const body = parse(task === "translate" ? TranslationRequest : TranscriptionRequest, form.textFields()) as TranscriptionRequest;
      const job = await transcription.prepare(body, form.file("file"), meterFor(paid), task);
      paid.hold(job.lease);
      paid.serve(job.entry, job.engine.router);
      paid.admit(job.entry, "audio");
      paid.record(job.entry.id);
      paid.onExit(({ status, delivered }) => {
        // Charges the audio its segments covered: all of it when done, what a stream had decoded when cut short, else nothing.
        if (status === 200 || delivered) transcription.settle(job);
        paid.usage = { audioSeconds: job.audioSeconds };
      });
      const sse = body.stream ? paid.sse() : undefined;
      let sent = "";
      // The first event's headers announce what the hold covers: the charge of the whole audio.
      const send = (stream: SseStream, event: unknown) => {
        if (!stream.started) res.set(costHeaders(job.meter.reservedCost()));
        stream.send(event);
      };
      const { result, cost, engineResult } = await transcription.run(job, paid.signal, (segment) => {
        if (!sse || !segment.text) return;
        const delta = sent ? ` ${segment.text}` : segment.text;
        sent += delta;
        send(sse, { type: "transcript.text.delta", delta });
      });
      if (sse) {
        send(sse, { type: "transcript.text.done", text: engineResult.text, usage: streamUsage(job, engineResult.outputTokens ?? 0), cost });
        sse.end();
        return;
      }
      res.set(costHeaders(cost));
      if (result.kind === "json") res.json(result.body);
      else res.type(result.contentType).send(result.body);
    });
  router.post("/audio/transcriptions", deps.authenticate, deps.multipartBody, transcribe("/audio/transcriptions"));
  router.post("/audio/translations", deps.authenticate, deps.multipartBody, transcribe("/audio/translations"));

  /**
   * The audio of a video: at a URL (JSON, the provider's form; fetched under --web-scraping on)
   * or uploaded (multipart, this node's extension). ffmpeg takes the audio track, the default
   * speech-to-text model transcribes it; billed per audio second as a transcription.
   */
  router.post("/video/transcriptions", deps.authenticate, deps.jsonBody, deps.multipartBody, (req, res) =>
    metered(deps, res, { endpoint: "/video/transcriptions" }, async (paid) => {
      const source = await videoSource(req, res, paid.signal);
      const job = await transcription.prepare(TranscriptionRequest.parse({ model: source.model, language: source.language, response_format: "json" }), source.file, meterFor(paid));
      paid.hold(job.lease);
      paid.serve(job.entry, job.engine.router);
      paid.admit(job.entry, "audio");
      paid.record(job.entry.id);
      paid.onExit(({ status }) => {
        if (status === 200) transcription.settle(job);
        paid.usage = { audioSeconds: job.audioSeconds };
      });
      const { cost, engineResult } = await transcription.run(job, paid.signal);
      res.set(costHeaders(cost));
      if (source.format === "text") res.type("text/plain").send(engineResult.text);
      else res.json({ transcript: engineResult.text, ...(engineResult.language ? { lang: engineResult.language } : {}) });
    }),
  );

  /** The video of a /video/transcriptions request, from its URL or its upload. */
  const videoSource = async (req: Request, res: Response, signal: AbortSignal) => {
    if (req.is("multipart/form-data")) {
      const form = readMultipart(req);
      const fields = parse(VideoTranscriptionFields, form.textFields());
      return { ...fields, format: fields.response_format, file: form.file("file") };
    }
    requireJson(req);
    const body = parse(VideoTranscriptionRequest, req.body);
    if (deps.config.webScraping !== "on") {
      throw new ApiError(503, "fetching a video by URL is not enabled on this node (an operator starts it with --web-scraping on); upload the file as multipart instead", {
        code: "URL_FETCH_DISABLED",
      });
    }
    const fetched = await fetchFile(body.url, { maxBytes: maxUploadBytes, timeoutMs: deps.config.requestTimeoutMs, hold: res.locals.ctx.holdBytes }, signal);
    if (!fetched.ok) {
      if (fetched.tooLarge) throw new PayloadTooLargeError(`Could not fetch ${body.url}: ${fetched.reason} (--max-upload-mb)`);
      throw new ApiError(422, `Could not fetch ${body.url}: ${fetched.reason}`, { code: "FETCH_FAILED" });
    }
    const file: MultipartPart = { name: "file", data: fetched.file.data, contentType: fetched.file.contentType };
    return { model: body.model, language: body.language, format: body.response_format, file };
  };

  // Voice cloning is not metered in credits, but is rate-limited and recorded as paid calls are.
  router.post("/audio/voices", deps.authenticate, deps.multipartBody, (req, res) =>
    metered(deps, res, { endpoint: "/audio/voices" }, async (paid) => {
      const form = readMultipart(req);
      const body = parse(CreateVoiceRequest, form.textFields());
      const entry = voices.cloningModel(body);
      paid.admit(entry, "audio", { showBalance: false });
      paid.record(entry.id);
      const voice = await voices.create(entry, body, form, paid.ctx.auth!.accountId, paid.signal);
      res.json({ id: voice.id, model: voice.modelId });
    }),
  );

  /** The account endpoints of voices: the account window's x-ratelimit-* headers, the balance, and the cloning model's headers. */
  const voiceHeaders = (res: Response) => {
    const ctx = res.locals.ctx;
    res.set(deps.limits.admitAccount(ctx));
    res.set(balanceHeaders(deps.credits.snapshot(ctx.auth!.accountId)));
    const cloning = deps.models.list().find((m) => m.type === "tts" && m.voiceCloning);
    if (cloning) setModelHeaders(res, cloning, cloning.backend);
  };

  router.get("/audio/voices", deps.authenticate, (_req, res) => {
    voiceHeaders(res);
    res.json({ object: "list", data: voices.list(res.locals.ctx.auth!.accountId).map(toVoiceRecord) });
  });

  router.delete("/audio/voices/:id", deps.authenticate, (req, res) => {
    voiceHeaders(res);
    const voice = voices.delete(res.locals.ctx.auth!.accountId, req.params.id as string);
    res.json({ id: voice.id, object: "voice", deleted: true });
  });

  return router;
}

/**
 * stream_format "sse": the encoded audio as the standard's speech.audio.delta events (base64),
 * as it is synthesised, then speech.audio.done with the usage and the charged cost. Headers
 * announce the cost of the whole input, as for a raw stream.
 */
async function streamSpeechEvents(paid: MeteredRequest, service: SpeechService, prepared: PreparedSpeech): Promise<void> {
  const { res } = paid;
  const events = paid.sse();
  let started = false;
  const start = () => {
    started = true;
    paid.commit();
    res.set(costHeaders(service.fullCost(prepared)));
  };
  for await (const chunk of service.stream(prepared, paid.signal)) {
    if (!started) start();
    if (res.writableEnded || res.destroyed) break;
    events.send({ type: "speech.audio.delta", audio: chunk.toString("base64") });
  }
  if (!started) start();
  if (res.destroyed) return;
  const cost = service.settle(prepared);
  events.send({ type: "speech.audio.done", usage: service.usage(prepared), cost });
  events.end();
}

/**
 * Writes a speech stream with chunked transfer: headers go out with the first audio bytes (so
 * an error before then is still a real status), each chunk is written as soon as it exists,
 * and the charged cost follows as trailers.
 */
async function streamSpeech(paid: MeteredRequest, service: SpeechService, prepared: PreparedSpeech): Promise<void> {
  const { res } = paid;
  let started = false;
  const start = () => {
    started = true;
    paid.commit();
    res.status(200);
    res.set({
      "Content-Type": prepared.contentType,
      "Content-Disposition": `inline; filename="speech.${prepared.format}"`,
      "Cache-Control": "no-cache, no-transform",
      "X-Accel-Buffering": "no",
      ...costHeaders(service.fullCost(prepared)),
      Trailer: "x-service-cost-usd, x-service-cost-diem",
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
  };
  for await (const chunk of service.stream(prepared, paid.signal)) {
    if (!started) start();
    if (res.writableEnded || res.destroyed) break;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!started) start();
  if (!res.destroyed) {
    res.addTrailers(costHeaders(service.settle(prepared)));
    res.end();
  }
}
