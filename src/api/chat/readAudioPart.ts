import { transcriptionCost } from "../../billing/pricing.js";
import { InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { withDeadline } from "../../http/withDeadline.js";
import { decodeAudio, FfmpegError, probeContainer } from "../../media/ffmpeg.js";
import { wavHeader } from "../../media/pcm.js";
import type { PartContext } from "./partContext.js";
import { decodeInlineField } from "./inlineData.js";
import type { ContentPart } from "./schema.js";

type AudioPart = Extract<ContentPart, { type: "input_audio" }>;

/** The sample rate assumed for headerless pcm16/pcm24 (the standard's realtime convention). */
const RAW_PCM_SAMPLE_RATE = 24_000;

/**
 * An `input_audio` part becomes its transcript, made by the text model's transcription model
 * (`audioInput.transcriptionModel`, else the node's default speech-to-text model) and billed
 * like POST /audio/transcriptions: per audio second, on the speech-to-text model.
 */
export async function readAudioPart(part: AudioPart, ctx: PartContext): Promise<string> {
  const path = [...ctx.path, "input_audio"];
  const asrId = ctx.entry.audioInput?.transcriptionModel ?? ctx.models.defaultFor("asr")?.id;
  if (!asrId) {
    throw InvalidRequestError.forField(
      [...ctx.path, "type"],
      `the model "${ctx.entry.id}" does not support audio input (input_audio parts): no transcription model is configured on this node`,
    );
  }
  const asr = ctx.models.get(asrId, "asr");
  const { data: base64, format } = part.input_audio;
  let audio = (
    await decodeInlineField(
      base64,
      [...path, "data"],
      ctx.limits.maxFileBytes,
      (bytes) => `the audio is ${(bytes / 1e6).toFixed(1)} MB; this node accepts up to ${(ctx.limits.maxFileBytes / 1e6).toFixed(1)} MB (--max-upload-mb)`,
    )
  ).data;
  if (format === "pcm16" || format === "pcm24") audio = toWav(audio, format === "pcm16" ? 2 : 3);
  const undecodable = () => InvalidRequestError.forField([...path, "data"], `could not decode the audio (declared format ${format})`);

  // Held for the whole read, so the model manager never unloads it mid-transcription.
  const lease = await ctx.models.acquire(asr.id, "transcription");
  try {
    const { engine } = lease;
    const meter = ctx.meterFor(asr);
    // A caller who goes away stops the decoding and the transcription too; past the deadline it is a 504.
    let seconds = 0;
    const text = await withDeadline(ctx.signal, ctx.limits.requestTimeoutMs, async (signal) => {
      // What ffmpeg cannot read, or holds no audio, is refused now, not once the transcriptions ahead of it are done.
      const { container, hasAudio } = await probeContainer(audio);
      if (!container || !hasAudio) throw undecodable();
      // Decoded when the engine is free for it, no further than a second past what the model
      // accepts and the caller can pay for (as POST /audio/transcriptions does).
      const samples = async () => {
        const limit = asr.transcription.maxAudioSeconds;
        const maxSeconds = meter.mostAffordable(Math.ceil(limit), (affordable) => transcriptionCost(asr, affordable));
        let decoded: Float32Array;
        try {
          decoded = await decodeAudio(audio, engine.sampleRate, signal, { maxSeconds });
        } catch (error) {
          if (signal.aborted) throw error;
          if (error instanceof FfmpegError) throw undecodable();
          throw error;
        }
        if (decoded.length === 0) throw InvalidRequestError.forField([...path, "data"], `the audio holds no samples (declared format ${format})`);
        seconds = decoded.length / engine.sampleRate;
        if (seconds > limit) throw new PayloadTooLargeError(`${[...path, "data"].join(".")}: the audio is longer than ${limit} s; ${asr.id} accepts at most ${limit} s`);
        meter.reserve(transcriptionCost(asr, seconds));
        return decoded;
      };
      try {
        return (await engine.transcribe({ audio: samples, timestamps: [], signal })).text;
      } catch (error) {
        meter.settle([]);
        throw error;
      }
    });
    meter.settle(transcriptionCost(asr, seconds));
    return `<audio transcript>\n${text.trim()}\n</audio>`;
  } finally {
    lease.release();
  }
}

/** Headerless little-endian mono PCM (16- or 24-bit) as a 16-bit WAV file ffmpeg can read. */
function toWav(raw: Buffer, bytesPerSample: 2 | 3): Buffer {
  if (bytesPerSample === 2) return Buffer.concat([wavHeader(RAW_PCM_SAMPLE_RATE, raw.length - (raw.length % 2)), raw.subarray(0, raw.length - (raw.length % 2))]);
  const count = Math.floor(raw.length / 3);
  const pcm16 = Buffer.alloc(count * 2);
  // The top two bytes of each 24-bit sample are its 16-bit value.
  for (let i = 0; i < count; i++) pcm16.writeInt16LE(raw.readInt16LE(i * 3 + 1), i * 2);
  return Buffer.concat([wavHeader(RAW_PCM_SAMPLE_RATE, pcm16.length), pcm16]);
}
