import express, { Router, type Response } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import { toErrorResponse } from "../../errors.js";
import { readMultipart } from "../../http/multipart.js";
import { parse, requireJson } from "../../http/parse.js";
import type { RequestContext } from "../../http/requestContext.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../../http/modelHeaders.js";
import { SseStream } from "../../http/sse.js";
import { CreateVoiceRequest, SpeechRequest, TranscriptionRequest, TranslationRequest } from "./schema.js";
import { SpeechService, type PreparedSpeech } from "./SpeechService.js";
import { streamUsage, TranscriptionService } from "./TranscriptionService.js";
import { toVoiceRecord, VoiceService } from "./VoiceService.js";
import { costHeaders } from "../../billing/costHeaders.js";

/** Status recorded for requests whose client went away before the response ended (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

// Binary and plain-text responses carry their cost in headers (JSON bodies also have a `cost`
// field). A streamed speech response announces the cost of the whole input up front and sends
// what was actually charged as HTTP trailers of the same names.

export function audioRouter(deps: AppDeps): Router {
  const maxUploadBytes = Math.round(deps.config.maxUploadMb * 1e6);
  const speech = new SpeechService(deps.models, deps.db, deps.now, deps.config.requestTimeoutMs);
  const transcription = new TranscriptionService(deps.models, deps.config.requestTimeoutMs, maxUploadBytes);
  const voices = new VoiceService(deps.models, deps.db, deps.config.dataDir, deps.now, maxUploadBytes);
  // The whole upload in memory (express answers 413 past the limit), split by Hearth's own multipart parser.
  const multipartBody = express.raw({ type: "multipart/form-data", limit: maxUploadBytes + 1_000_000 });
  const meterFor = (ctx: RequestContext) => (entry: { id: string }) => new RequestMeter(deps.credits, ctx, entry.id);
  const usage = (ctx: RequestContext, row: Parameters<typeof recordRequestUsage>[2]) => recordRequestUsage(deps.db, ctx, row);

  const router = Router();

  router.post("/audio/speech", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(SpeechRequest, req.body);
    const ctx = res.locals.ctx;
    const prepared = await speech.prepare(body, ctx.auth?.accountId, meterFor(ctx));
    try {
      setModelHeaders(res, prepared.entry, prepared.engine.router);
      res.set(deps.limits.admit(ctx, prepared.entry, "audio"));
      if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
      speech.reserve(prepared);
    } catch (error) {
      prepared.lease.release();
      throw error;
    }

    let status = 200;
    const delivery: SpeechDelivery = { started: false };
    try {
      if (prepared.events) {
        await streamSpeechEvents(res, speech, prepared, ctx.abort.signal, delivery);
        if (ctx.abort.signal.aborted) status = CLIENT_CLOSED_REQUEST;
      } else if (prepared.streaming) {
        await streamSpeech(res, speech, prepared, ctx.abort.signal, delivery);
        if (ctx.abort.signal.aborted) status = CLIENT_CLOSED_REQUEST;
      } else {
        const { audio, contentType, cost } = await speech.complete(prepared, ctx.abort.signal);
        res.set({
          "Content-Type": contentType,
          "Content-Length": String(audio.length),
          "Content-Disposition": `inline; filename="speech.${prepared.format}"`,
          ...costHeaders(cost),
        });
        res.end(audio);
      }
    } catch (error) {
      status = ctx.abort.signal.aborted ? CLIENT_CLOSED_REQUEST : toErrorResponse(error).status;
      if (!delivery.started) {
        // Nothing was delivered: nothing is charged.
        prepared.meter.settle([]);
        throw error;
      }
      // Audio already went out: the status line is sent, so the stream is cut short instead
      // (an event stream says why in an error event).
      if (delivery.events && !ctx.abort.signal.aborted) delivery.events.fail(error);
      else res.destroy(error as Error);
    } finally {
      prepared.lease.release();
      // Charges what was synthesised (a no-op when already settled).
      speech.settle(prepared);
      const outcome = speech.outcome(prepared);
      usage(ctx, {
        endpoint: "/audio/speech",
        model: prepared.entry.id,
        status,
        characters: status === 200 || delivery.started ? outcome.characters : 0,
        audioSeconds: outcome.audioSeconds,
        finishReason: outcome.completed ? "stop" : status === CLIENT_CLOSED_REQUEST ? "abort" : null,
      });
    }
  });

  /**
   * Transcriptions and translations: one handler, billed and limited the same way. A stream
   * (transcriptions, stream: true) sends each segment's text as it is decoded; cut short, it is
   * charged for the audio its segments covered.
   */
  const transcribe = (endpoint: "/audio/transcriptions" | "/audio/translations") =>
    async function handle(req: express.Request, res: Response) {
      const form = readMultipart(req);
      const task = endpoint === "/audio/translations" ? "translate" : "transcribe";
      const body = parse(task === "translate" ? TranslationRequest : TranscriptionRequest, form.textFields()) as TranscriptionRequest;
      const ctx = res.locals.ctx;
      const job = await transcription.prepare(body, form.file("file"), meterFor(ctx), task);
      try {
        setModelHeaders(res, job.entry, job.engine.router);
        res.set(deps.limits.admit(ctx, job.entry, "audio"));
        if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
      } catch (error) {
        job.lease.release();
        throw error;
      }
      let status = 200;
      const sse = body.stream ? new SseStream(res) : undefined;
      try {
        let sent = "";
        // The first event's headers announce what the hold covers: the charge of the whole audio.
        const send = (stream: SseStream, event: unknown) => {
          if (!stream.started) res.set(costHeaders(job.meter.reservedCost()));
          stream.send(event);
        };
        const { result, cost, engineResult } = await transcription.run(job, ctx.abort.signal, (segment) => {
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
      } catch (error) {
        status = ctx.abort.signal.aborted ? CLIENT_CLOSED_REQUEST : toErrorResponse(error).status;
        if (!sse?.started) throw error;
        if (!ctx.abort.signal.aborted) sse.fail(error);
      } finally {
        job.lease.release();
        // Charges the audio its segments covered: all of it when done, what a stream had decoded when cut short, else nothing.
        if (status === 200 || sse?.started) transcription.settle(job);
        else job.meter.settle([]);
        usage(ctx, { endpoint, model: job.entry.id, status, audioSeconds: job.audioSeconds });
      }
    };
  router.post("/audio/transcriptions", deps.authenticate, multipartBody, transcribe("/audio/transcriptions"));
  router.post("/audio/translations", deps.authenticate, multipartBody, transcribe("/audio/translations"));

  router.post("/audio/voices", deps.authenticate, multipartBody, async (req, res) => {
    const form = readMultipart(req);
    const body = parse(CreateVoiceRequest, form.textFields());
    const ctx = res.locals.ctx;
    const entry = voices.cloningModel(body);
    res.set(deps.limits.admit(ctx, entry, "audio"));
    let status = 200;
    try {
      const voice = await voices.create(entry, body, form, ctx.auth!.accountId, ctx.abort.signal);
      res.json({ id: voice.id, model: voice.modelId });
    } catch (error) {
      status = toErrorResponse(error).status;
      throw error;
    } finally {
      usage(ctx, { endpoint: "/audio/voices", model: entry.id, status });
    }
  });

  router.get("/audio/voices", deps.authenticate, (_req, res) => {
    res.json({ object: "list", data: voices.list(res.locals.ctx.auth!.accountId).map(toVoiceRecord) });
  });

  router.delete("/audio/voices/:id", deps.authenticate, (req, res) => {
    const voice = voices.delete(res.locals.ctx.auth!.accountId, req.params.id as string);
    res.json({ id: voice.id, object: "voice", deleted: true });
  });

  return router;
}

interface SpeechDelivery {
  /** Whether the status line went out. */
  started: boolean;
  /** The event stream, for stream_format "sse". */
  events?: SseStream;
}

/**
 * stream_format "sse": the encoded audio as the standard's speech.audio.delta events (base64),
 * as it is synthesised, then speech.audio.done with the usage and the charged cost. Headers
 * announce the cost of the whole input, as for a raw stream.
 */
async function streamSpeechEvents(res: Response, service: SpeechService, prepared: PreparedSpeech, signal: AbortSignal, delivery: SpeechDelivery): Promise<void> {
  const events = new SseStream(res);
  const start = () => {
    delivery.started = true;
    delivery.events = events;
    res.set(costHeaders(service.fullCost(prepared)));
  };
  for await (const chunk of service.stream(prepared, signal)) {
    if (!delivery.started) start();
    if (res.writableEnded || res.destroyed) break;
    events.send({ type: "speech.audio.delta", audio: chunk.toString("base64") });
  }
  if (!delivery.started) start();
  if (res.destroyed) return;
  const cost = service.settle(prepared);
  events.send({ type: "speech.audio.done", usage: service.usage(prepared), cost });
  events.end();
}

/**
 * Writes a speech stream with chunked transfer: headers go out with the first audio bytes (so
 * an error before then is still a real status), each chunk is written as soon as it exists,
 * and the charged cost follows as trailers. `delivery.started` says whether the status line went out.
 */
async function streamSpeech(res: Response, service: SpeechService, prepared: PreparedSpeech, signal: AbortSignal, delivery: { started: boolean }): Promise<void> {
  const start = () => {
    delivery.started = true;
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
  for await (const chunk of service.stream(prepared, signal)) {
    if (!delivery.started) start();
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
  if (!delivery.started) start();
  if (!res.destroyed) {
    res.addTrailers(costHeaders(service.settle(prepared)));
    res.end();
  }
}
