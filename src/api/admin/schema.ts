import { z } from "zod";

/** Path parameter of the load and unload endpoints (ids may contain '/': send them as is or URL-encoded). */
export const AdminModelParams = z.object({ id: z.string().min(1) });

const Memory = z.object({ ramBytes: z.number(), vramBytes: z.number() });

/** Where onnxruntime runs a loaded ONNX model (kokoro, vits, whisper, transformers, onnx-diffusion), and why. */
const ExecutionProvider = z
  .object({
    name: z.string().describe('The provider the model runs on: "cuda" or "cpu" (another onnxruntime provider when the model\'s list names one)'),
    providers: z.array(z.string()).describe('What its sessions were given, in order of preference, e.g. ["cuda", "cpu"]'),
    reason: z.string().describe('Why, e.g. "auto: the CUDA provider is installed and a test session ran on it" or "auto: the CUDA provider library is not installed (…)"'),
    fellBack: z.boolean().describe('It runs somewhere other than asked: a listed provider was skipped, or "auto" found the CUDA provider installed but not working'),
  })
  .describe('Where onnxruntime runs the model ("auto" resolves to CUDA when its provider is installed and works, else the CPU), and why');

/** One replica of an upstream model's pool. */
const ReplicaStatusRecord = z.object({
  baseUrl: z.string().describe("The replica's base URL, without credentials (also its `replica` label in the hearth_upstream_* metrics)"),
  weight: z.number().describe("Its share of the traffic relative to the other replicas"),
  maxInFlight: z.number().int().nullable().describe("Requests this node sends it at once (null: no limit)"),
  healthy: z.boolean().describe("In the pool; false: ejected after a failure, until a health check succeeds after ejectedUntil"),
  ejectedUntil: z.number().nullable().describe("Epoch ms until which an ejected replica is left alone (its back-off doubles with each failure in a row)"),
  inFlight: z.number().int().describe("Requests this node has on it now"),
  requests: z.number().int().describe("Requests sent to it since the model loaded (retries included)"),
  errors: z.number().int().describe("Of those, the ones it failed (refused, timed out, 5xx, a stream cut off)"),
  lastLatencyMs: z.number().nullable().describe("How long its last answer took to start, in ms"),
  lastError: z.string().nullable().describe("Its last failure"),
});

/** One model's lifecycle, as ModelManager.status() reports it. */
export const ModelStatusRecord = z.object({
  id: z.string(),
  object: z.literal("model.status"),
  type: z.string(),
  backend: z.string(),
  state: z.enum(["unloaded", "loading", "loaded", "failed"]),
  /** Why the last load failed (state "failed"); the next request retries after a short back-off. */
  error: z.string().nullable(),
  /** Memory once loaded: a loaded GGUF model's own report from llama.cpp (weights, KV cache, compute buffers); otherwise the estimate (GGUF: node-llama-cpp's simulation of the same; ONNX: file sizes). */
  memory: Memory.nullable(),
  inFlight: z.number().int(),
  queue: z.object({ busy: z.number().int(), waiting: z.number().int() }).nullable(),
  /** A loaded llama.cpp chat model's decode calls since it loaded; null for other models. */
  decode: z
    .object({
      batches: z.number().int().describe("llama.cpp decode calls"),
      tokens: z.number().int().describe("tokens decoded in them, prompt and generated"),
      sequencesPerBatch: z.record(z.string(), z.number().int()).describe('decode calls by the number of sequences in them, e.g. {"4": 120}'),
      fullSteps: z.number().int().describe("generation steps every generating sequence took part in"),
      deadlineSteps: z.number().int().describe("generation steps that went ahead without a sequence that was late"),
      deadlineMs: z.number().describe("how long generating sequences now wait for a late one"),
      overlapOutput: z.boolean().describe("whether a step's text goes to the clients while the next step decodes (llama.overlapOutput)"),
    })
    .nullable(),
  loadedAt: z.number().nullable(),
  lastUsedAt: z.number().nullable(),
  /** -1: never unloaded for idleness. */
  keepAliveSeconds: z.number().int(),
  sharedWith: z.array(z.string()),
  /** Loaded ONNX models only (null while unloaded, and for GGUF and upstream models). */
  executionProvider: ExecutionProvider.nullable(),
  /** Loaded upstream models only: each replica of the pool (a single base URL is a pool of one). */
  replicas: z.array(ReplicaStatusRecord).nullable().describe("A loaded upstream model's replicas and their health; null for other models and while unloaded"),
});
export type ModelStatusRecord = z.infer<typeof ModelStatusRecord>;

export const MemoryBudget = z.object({
  ram: z.object({ limitBytes: z.number().nullable(), usedBytes: z.number() }),
  vram: z.object({ limitBytes: z.number().nullable(), usedBytes: z.number() }),
});

export const AdminModelsResponse = z.object({
  object: z.literal("list"),
  data: z.array(ModelStatusRecord),
  budget: MemoryBudget,
});
export type AdminModelsResponse = z.infer<typeof AdminModelsResponse>;

export const AdminModelResponse = z.object({ data: ModelStatusRecord, budget: MemoryBudget });
export type AdminModelResponse = z.infer<typeof AdminModelResponse>;
