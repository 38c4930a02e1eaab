import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { VisualInput } from "../../engines/registry.js";
import type { ModelManager } from "../../models/ModelManager.js";

/** What a content-part reader gets besides the part (its own module: the readers and the dispatcher in contentParts.ts both import it). */

export interface ContentPartLimits {
  /** Largest decoded file or audio part, in bytes (--max-upload-mb). */
  maxFileBytes: number;
  /** Longest text extracted from one file, in characters. */
  maxFileChars: number;
  /** Transcription of one audio part, or sampling one video part, runs at most this long (504 after). */
  requestTimeoutMs: number;
}

export interface PartContext {
  /** The text model the conversation is for. */
  entry: ModelEntry;
  models: ModelManager;
  /** Bills work done on another model (the transcription of an audio part). */
  meterFor: (entry: ModelEntry) => RequestMeter;
  limits: ContentPartLimits;
  /** Where the part is, for the error's details. */
  path: (string | number)[];
  /** The caller went away: stop reading (transcribing) at once. */
  signal?: AbortSignal;
  /** How the model takes image and video parts. */
  visual: VisualInput;
  /** The request's image and video parts so far (limits count across messages). */
  counts: { images: number; videos: number };
  /** http(s) URLs in image and video parts are fetched (the operator's --web-scraping on). */
  fetchUrls: boolean;
  /** The request's hold on memory for a fetched file (RequestContext.holdBytes). */
  holdBytes?: (bytes: number) => void;
}
