import type { Readable } from "node:stream";
import type { Cost } from "../../billing/credits.js";
import { countCharacters, speechCost } from "../../billing/pricing.js";
import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { SpeechFormat } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { PcmSpeechEngine, SpeechEngine, SpeechVoice } from "../../engines/types.js";
import { InvalidRequestError, NotFoundError } from "../../errors.js";
import { createAudioEncoderStream, encodeAudio, stretchAudio } from "../../media/ffmpeg.js";
import { floatPartsToPcm16, floatToPcm16, WAV_HEADER_BYTES, wavHeader } from "../../media/pcm.js";
import type { ModelLease, ModelManager } from "../../models/ModelManager.js";
import { findClonedVoice, touchClonedVoice } from "../../store/clonedVoices.js";
import type { Db } from "../../store/Store.js";
import { PCM_SAMPLE_RATE, SPEECH_CONTENT_TYPES, type SpeechRequest } from "./schema.js";
import { isSpeakable, splitSentences } from "./splitSentences.js";
import { withDeadline } from "../../http/withDeadline.js";
import { DAY_MS } from "../../time.js";

export interface PreparedSpeech {
  entry: ModelEntry;
  engine: SpeechEngine;
  /** Holds the model loaded until the route releases it. */
  lease: ModelLease<"speech">;
  input: string;
  /** What is synthesised one after another (sentences; the whole input for relayed models). */
  pieces: string[];
  voice: SpeechVoice;
  format: SpeechFormat;
  contentType: string;
  /** Raw audio bytes as they are synthesised. */
  streaming: boolean;
  /** The audio as server-sent events (stream_format "sse"). */
  events: boolean;
  speed: number;
  language?: string;
  prompt?: string;
  temperature?: number;
  topP?: number;
  characters: number;
  meter: RequestMeter;
  /** What has been synthesised so far: billing charges this, also when the client leaves half-way. */
  progress: { pieces: number; characters: number; seconds: number };
}

/** What a synthesis produced, for billing and the usage log. */
export interface SpeechOutcome {
  /** Characters billed: the whole input once every piece is done, else the pieces synthesised. */
  characters: number;
  audioSeconds: number;
  completed: boolean;
}

/** Wire speech request -> voice, pieces and engine calls -> encoded audio. Knows nothing about Express. */
export class SpeechService {
  constructor(
    private readonly models: ModelManager,
    private readonly db: Db,
    private readonly now: () => number,
    private readonly requestTimeoutMs: number,
  ) {}

  async prepare(request: SpeechRequest, accountId: string | undefined, meterFor: (entry: ModelEntry) => RequestMeter): Promise<PreparedSpeech> {
    const modelId = request.model ?? this.models.defaultFor("tts")?.id;
    if (!modelId) throw InvalidRequestError.forField(["model"], "no text-to-speech model is configured on this node");
    const entry = this.models.get(modelId, "tts");
    const format = request.response_format ?? entry.speech.defaultFormat;
    if (!entry.speech.supportedFormats.includes(format)) {
      throw InvalidRequestError.forField(["response_format"], `${entry.id} supports ${entry.speech.supportedFormats.join(", ")}`);
    }
    const lease = await this.models.acquire(entry.id, "speech");
    const { engine } = lease;
    try {
      const voice = this.resolveVoice(entry, engine, request.voice, accountId);
      const speech = entry.speech;
      return {
        entry,
        engine,
        lease,
        input: request.input,
        pieces: engine.output === "pcm" ? splitSentences(request.input, speech.maxChunkCharacters).filter(isSpeakable) : [request.input],
        voice,
        format,
        contentType: SPEECH_CONTENT_TYPES[format],
        streaming: request.streaming,
        events: request.stream_format === "sse",
        speed: request.speed,
        language: request.language,
        // Parameters the model does not advertise are ignored, as the reference says.
        prompt: speech.supportsPromptParam ? request.prompt : undefined,
        temperature: speech.supportsTemperatureParam ? request.temperature : undefined,
        topP: speech.supportsTopPParam ? request.top_p : undefined,
        characters: countCharacters(request.input),
        meter: meterFor(entry),
        progress: { pieces: 0, characters: 0, seconds: 0 },
      };
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  /** Holds the price of the whole input before anything is synthesised (402 when it is not covered). */
  reserve(speech: PreparedSpeech): void {
    speech.meter.reserve(speechCost(speech.entry, speech.characters));
  }

  /** The voice a request names (or the model's default): a preset, an alias of one, or the account's cloned voice. */
  resolveVoice(entry: ModelEntry, engine: SpeechEngine, requested: string | undefined, accountId: string | undefined): SpeechVoice {
    const offered = engine.voices();
    const name = requested ?? entry.speech.defaultVoice ?? offered[0];
    if (!name) throw InvalidRequestError.forField(["voice"], `${entry.id} needs a voice`);
    if (name.startsWith("vv_")) {
      const cloned = accountId ? findClonedVoice(this.db, accountId, name, this.now()) : undefined;
      // Handles are private to the account that made them: anyone else is told it does not exist.
      if (!cloned) throw new NotFoundError(`The voice "${name}" does not exist. GET /audio/voices lists your cloned voices.`);
      if (cloned.modelId !== entry.id) {
        throw InvalidRequestError.forField(["voice"], `the voice ${name} was cloned for ${cloned.modelId} and only works with that model`);
      }
      if (engine.output !== "pcm" || !engine.cloning) throw InvalidRequestError.forField(["voice"], `${entry.id} does not take cloned voices`);
      return { kind: "cloned", id: cloned.id, style: cloned.embedding };
    }
    if (offered.includes(name)) return { kind: "preset", name };
    // Another name for one of its voices: the standard's (alloy, onyx, ...) or one configured in speech.voiceAliases.
    const aliased = this.models.voiceAliases(entry)[name];
    if (aliased !== undefined) {
      if (offered.length > 0 && !offered.includes(aliased) && !entry.speech.supportsCustomVoiceId) {
        throw InvalidRequestError.forField(["voice"], `"${name}" stands for "${aliased}", which is not a voice of ${entry.id}`);
      }
      return { kind: "preset", name: aliased };
    }
    if (offered.length > 0 && !entry.speech.supportsCustomVoiceId) {
      const list = offered.length > 20 ? `${offered.slice(0, 20).join(", ")}, ...` : offered.join(", ");
      throw InvalidRequestError.forField(["voice"], `"${name}" is not a voice of ${entry.id}; its voices are ${list} (GET /models shows voice_aliases)`);
    }
    return { kind: "preset", name };
  }

  /**
   * The standard's usage for a speech event stream: input_tokens counts the characters billed,
   * output_tokens the audio produced in 20 ms frames (a relayed model reports none).
   */
  usage(speech: PreparedSpeech): { input_tokens: number; output_tokens: number; total_tokens: number } {
    const outcome = this.outcome(speech);
    const output = Math.round(outcome.audioSeconds * 50);
    return { input_tokens: outcome.characters, output_tokens: output, total_tokens: outcome.characters + output };
  }

  /** The cost when every character is synthesised: what the headers of a streamed response announce. */
  fullCost(speech: PreparedSpeech): Cost {
    return speech.meter.reservedCost();
  }

  /** What the synthesis produced so far (the whole input once every piece is done; characters between pieces go with the last). */
  outcome(speech: PreparedSpeech): SpeechOutcome {
    const completed = speech.progress.pieces === speech.pieces.length;
    return { characters: completed ? speech.characters : speech.progress.characters, audioSeconds: speech.progress.seconds, completed };
  }

  /**
   * Charges what was synthesised (exactly once: later calls return the same cost); a cloned
   * voice that was used stays alive for another retention window.
   */
  settle(speech: PreparedSpeech): Cost {
    const outcome = this.outcome(speech);
    const alreadySettled = speech.meter.settledCost !== undefined;
    const cost = speech.meter.settle(speechCost(speech.entry, outcome.characters));
    if (!alreadySettled && outcome.completed && speech.voice.kind === "cloned") {
      touchClonedVoice(this.db, speech.voice.id, this.now(), speech.entry.voiceCloning!.retentionDays * DAY_MS);
    }
    return cost;
  }

  /** Non-streaming: the whole file, or 504 past the request timeout. */
  async complete(speech: PreparedSpeech, clientSignal: AbortSignal): Promise<{ audio: Buffer; contentType: string; cost: Cost }> {
    const { audio, contentType } = await withDeadline(clientSignal, this.requestTimeoutMs, async (signal) => {
      let audio: Buffer;
      let contentType = speech.contentType;
      if (speech.engine.output === "relay") {
        const relayed = await speech.engine.speak({ ...this.synthesisOptions(speech, speech.input, signal), format: speech.format, streaming: false });
        const chunks: Uint8Array[] = [];
        for await (const chunk of relayed.body) chunks.push(chunk);
        audio = Buffer.concat(chunks);
        contentType = relayed.contentType;
        speech.progress = { pieces: 1, characters: speech.characters, seconds: 0 };
      } else {
        const parts: Float32Array[] = [];
        for await (const samples of this.synthesizeEach(speech.engine, speech, signal)) parts.push(samples);
        audio = await encodeWhole(parts, speech.engine.sampleRate, speech.format, signal);
      }
      return { audio, contentType };
    });
    // Settled once the deadline can no longer turn the answer into a 504.
    return { audio, contentType, cost: this.settle(speech) };
  }

  /**
   * Streaming: yields encoded audio as each sentence is synthesised. Aborting `signal` stops at
   * the sentence being synthesised; `speech.progress` says what was produced.
   */
  async *stream(speech: PreparedSpeech, signal: AbortSignal): AsyncGenerator<Buffer, void> {
    if (speech.engine.output === "relay") {
      const relayed = await speech.engine.speak({ ...this.synthesisOptions(speech, speech.input, signal), format: speech.format, streaming: true });
      // The upstream charges the node for the whole input once it starts answering.
      speech.progress = { pieces: 1, characters: speech.characters, seconds: 0 };
      for await (const chunk of relayed.body) yield Buffer.from(chunk);
      return;
    }
    const engine = speech.engine;
    const pieces = this.synthesizeEach(engine, speech, signal);
    if (speech.format === "wav" || (speech.format === "pcm" && engine.sampleRate === PCM_SAMPLE_RATE)) {
      // PCM framing needs no encoder: a WAV header of unknown length, then 16-bit samples.
      if (speech.format === "wav") yield wavHeader(engine.sampleRate);
      for await (const samples of pieces) yield floatToPcm16(samples);
      return;
    }
    const encoder = createAudioEncoderStream(engine.sampleRate, speech.format, speech.format === "pcm" ? { outputSampleRate: PCM_SAMPLE_RATE } : {});
    let producerError: unknown;
    const producer = (async () => {
      try {
        for await (const samples of pieces) await encoder.write(samples);
        encoder.end();
      } catch (error) {
        producerError = error;
        encoder.kill();
      }
    })();
    const onAbort = () => encoder.kill();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const chunk of coalesced(encoder.output)) yield chunk;
      await producer;
      if (producerError) throw producerError;
      signal.throwIfAborted();
      await encoder.done;
    } finally {
      signal.removeEventListener("abort", onAbort);
      encoder.kill();
    }
  }

  /** Synthesises the pieces in order, recording progress after each. */
  private async *synthesizeEach(engine: PcmSpeechEngine, speech: PreparedSpeech, signal: AbortSignal): AsyncGenerator<Float32Array> {
    for (const piece of speech.pieces) {
      signal.throwIfAborted();
      const samples = await this.synthesizePiece(engine, speech, piece, signal);
      speech.progress.pieces++;
      speech.progress.characters += countCharacters(piece);
      speech.progress.seconds += samples.length / engine.sampleRate;
      yield samples;
    }
  }

  private synthesizePiece(engine: PcmSpeechEngine, speech: PreparedSpeech, piece: string, signal: AbortSignal): Promise<Float32Array> {
    return synthesizeAtSpeed(engine, this.synthesisOptions(speech, piece, signal));
  }

  private synthesisOptions(speech: PreparedSpeech, text: string, signal: AbortSignal) {
    return {
      text,
      voice: speech.voice,
      speed: speech.speed,
      language: speech.language,
      prompt: speech.prompt,
      temperature: speech.temperature,
      topP: speech.topP,
      signal,
    };
  }
}

/**
 * Reads a stream in paused mode: each read takes everything buffered since the last one, so
 * while the previous chunk is being written out, the encoder's small packets (an MP3 frame is
 * a few hundred bytes) gather into one write instead of hundreds.
 */
async function* coalesced(stream: Readable): AsyncGenerator<Buffer> {
  let ended = false;
  let failed: Error | undefined;
  stream.once("end", () => (ended = true));
  stream.once("error", (error: Error) => (failed = error));
  for (;;) {
    const chunk = stream.read() as Buffer | null;
    if (chunk) {
      yield chunk;
      continue;
    }
    if (failed) throw failed;
    if (ended || stream.readableEnded || stream.destroyed) return;
    await new Promise<void>((resolve) => {
      const wake = () => {
        stream.off("readable", wake);
        stream.off("end", wake);
        stream.off("error", wake);
        stream.off("close", wake);
        resolve();
      };
      stream.on("readable", wake);
      stream.on("end", wake);
      stream.on("error", wake);
      stream.on("close", wake);
    });
  }
}

/** One piece of text as samples at the requested speed (stretched by ffmpeg when the model has no speed control of its own). */
export async function synthesizeAtSpeed(engine: PcmSpeechEngine, options: Parameters<PcmSpeechEngine["synthesize"]>[0]): Promise<Float32Array> {
  const samples = await engine.synthesize(options);
  return engine.nativeSpeed ? samples : stretchAudio(samples, engine.sampleRate, options.speed, options.signal);
}

/**
 * A complete file from the pieces' samples in order: WAV and PCM framed here (exact header),
 * the compressed formats by ffmpeg. The pieces are never concatenated: 4,096 characters can be
 * 17 minutes of audio.
 */
export async function encodeWhole(parts: readonly Float32Array[], sampleRate: number, format: SpeechFormat, signal: AbortSignal): Promise<Buffer> {
  if (format === "wav") {
    const samples = parts.reduce((n, part) => n + part.length, 0);
    const file = await floatPartsToPcm16(parts, { headerBytes: WAV_HEADER_BYTES, signal });
    wavHeader(sampleRate, samples * 2).copy(file);
    return file;
  }
  if (format === "pcm" && sampleRate === PCM_SAMPLE_RATE) return floatPartsToPcm16(parts, { signal });
  return encodeAudio(parts, sampleRate, format, signal, format === "pcm" ? { outputSampleRate: PCM_SAMPLE_RATE } : {});
}
