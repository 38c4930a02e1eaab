import { type ChatWrapper, JinjaTemplateChatWrapper, type LlamaModel, resolveChatWrapper } from "node-llama-cpp";
import { WorkerPool } from "../worker/WorkerPool.js";
import { siblingModule } from "../worker/siblingModule.js";
import type { ChatWrapperKind, ChatWrapperTask } from "./chatWrapperWorker.js";
import { knownChatWrapper } from "./knownChatFeatures.js";
import { modelFileKey } from "./modelFileKey.js";
import { readGgufScalarMetadata } from "./readGgufScalarMetadata.js";

/**
 * The chat wrapper for a model file, resolved once per file (path, size, modification time).
 * node-llama-cpp's resolution renders the model's Jinja template against every compatible
 * specialized wrapper, synchronously: 0.6 to 1.3 s for the demo chat model, 0.8 to 5 s for the
 * templates of current models (llama.cpp's collection of 71), during which, on the event loop,
 * no other request moves. What is kept:
 * - a specialized wrapper itself (it holds only the settings the resolution chose);
 * - for a template no specialized wrapper renders, only that answer: a Jinja template wrapper
 *   holds the model's tokenizer, which dies with the model, and building one for a known
 *   answer takes 3 to 200 ms (the same wrapper the resolution ends with).
 * Templates Hearth generates are answered from the known-template table. Any other template is
 * first resolved in a worker thread (chatWrapperKindEarly), when the server starts and while the
 * model loads; only a specialized answer is resolved again here, to build that wrapper with the
 * settings the resolution picks.
 */
const resolved = new Map<string, { wrapper: ChatWrapper } | "jinjaTemplate">();
/** Files being resolved off the event loop, by file key: a load waits for the same answer. */
const resolving = new Map<string, Promise<ChatWrapperKind | undefined>>();

/** The file's chat wrapper; `early` is chatWrapperKindEarly's promise, when started before the model loaded. */
export async function chatWrapperFor(file: string, model: LlamaModel, early = chatWrapperKindEarly(file)): Promise<ChatWrapper> {
  // A Jinja answer from the worker is kept for the file below.
  await early;
  const key = modelFileKey(file);
  const known = key === undefined ? undefined : resolved.get(key);
  if (known !== undefined && known !== "jinjaTemplate") return known.wrapper;
  const metadata = model.fileInfo.metadata;
  const template = metadata.tokenizer?.chat_template;
  if (known === "jinjaTemplate" || (typeof template === "string" && knownChatWrapper(template, metadata.general?.architecture) === "jinjaTemplate")) {
    if (key !== undefined) resolved.set(key, "jinjaTemplate");
    // Falls back to the full resolution by itself if the template does not build.
    return resolveChatWrapper(model, { type: "jinjaTemplate" });
  }
  const wrapper = resolveChatWrapper(model);
  if (key !== undefined) resolved.set(key, wrapper instanceof JinjaTemplateChatWrapper ? "jinjaTemplate" : { wrapper });
  return wrapper;
}

/**
 * Resolves a model file's chat wrapper in a worker thread (chatWrapperKindOffThread) when nothing
 * known answers it (no resolution kept for the file, a template not in the known-template table;
 * the template is read from the file's header), and keeps a Jinja answer for the file. Started
 * when the server starts for every GGUF chat model in the registry, and when a model starts
 * loading, so that the resolution runs beside the load; undefined when no worker was needed or
 * it could not answer. A file without a template is left alone: its resolution only reads the
 * model's names.
 */
export function chatWrapperKindEarly(file: string): Promise<ChatWrapperKind | undefined> {
  const key = modelFileKey(file);
  if (key === undefined || resolved.has(key)) return Promise.resolve(undefined);
  const inFlight = resolving.get(key);
  if (inFlight) return inFlight;
  const answer = (async () => {
    try {
      const metadata = (await readGgufScalarMetadata(file)) as { tokenizer?: { chat_template?: unknown }; general?: { architecture?: unknown } };
      const template = metadata.tokenizer?.chat_template;
      const architecture = typeof metadata.general?.architecture === "string" ? metadata.general.architecture : undefined;
      if (typeof template !== "string" || template.trim() === "" || knownChatWrapper(template, architecture) !== undefined) return undefined;
    } catch {
      return undefined;
    }
    const kind = await chatWrapperKindOffThread(file);
    if (kind === "jinjaTemplate") resolved.set(key, "jinjaTemplate");
    return kind;
  })().finally(() => resolving.delete(key));
  resolving.set(key, answer);
  return answer;
}

/** Where a model file's chat wrapper stands in this process (tests, diagnostics). */
export function chatWrapperResolution(file: string): "kept" | "resolving" | undefined {
  const key = modelFileKey(file);
  if (key === undefined) return undefined;
  return resolved.has(key) ? "kept" : resolving.has(key) ? "resolving" : undefined;
}

/**
 * node-llama-cpp's full resolution for a model file, in a worker thread, from the file's
 * vocabulary; undefined if the worker could not answer (the caller resolves on its own thread).
 * The worker's start (about 1.4 s, most of it node-llama-cpp's binding) overlaps the model's own
 * load (chatWrapperKindEarly); it stays for RESOLVER_IDLE_MS after its last answer, so models
 * loaded one after another share it, then ends (model files are resolved once per process).
 */
export async function chatWrapperKindOffThread(file: string): Promise<ChatWrapperKind | undefined> {
  if (!resolver) {
    const started = { pool: WorkerPool.start({ name: "chat template resolution", entry: WORKER, data: null, size: 1, maxWaiting: 16, unref: true }), running: 0 };
    // A worker that could not start is not kept: the next call tries again.
    started.pool.catch(() => {
      if (resolver === started) resolver = undefined;
    });
    resolver = started;
  }
  const current = resolver;
  clearTimeout(current.idle);
  current.running++;
  try {
    const { result } = await (await current.pool).run<ChatWrapperKind>({ file } satisfies ChatWrapperTask);
    return result;
  } catch {
    return undefined;
  } finally {
    if (--current.running === 0) {
      current.idle = setTimeout(() => {
        if (resolver === current) resolver = undefined;
        current.pool.then((pool) => pool.dispose()).catch(() => {});
      }, RESOLVER_IDLE_MS).unref();
    }
  }
}

const RESOLVER_IDLE_MS = 30_000;
const WORKER = siblingModule(import.meta.url, "chatWrapperWorker");
let resolver: { pool: Promise<WorkerPool>; running: number; idle?: NodeJS.Timeout } | undefined;
