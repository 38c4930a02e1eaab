import { type ChatWrapper, JinjaTemplateChatWrapper, type LlamaModel, resolveChatWrapper } from "node-llama-cpp";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { siblingModule } from "../worker/siblingModule.js";
import type { ChatWrapperAnswer, ChatWrapperKind } from "./chatWrapperChild.js";
import { buildSpecialized } from "./specializedChoice.js";
import { knownChatWrapper } from "./knownChatFeatures.js";
import { modelFileKey } from "./modelFileKey.js";
import { readGgufScalarMetadata } from "./readGgufScalarMetadata.js";

/**
 * The chat wrapper for a model file, resolved once per file (path, size, modification time).
 * node-llama-cpp's resolution renders the model's Jinja template against every compatible
 * specialized wrapper, synchronously: 0.6 to 1.3 s for the demo chat model, up to 3.6 s for the
 * templates of current models (median 1 s over llama.cpp's collection of 71), during which, on the event loop,
 * no other request moves. What is kept:
 * - a specialized wrapper itself (it holds only the settings the resolution chose);
 * - for a template no specialized wrapper renders, only that answer: a Jinja template wrapper
 *   holds the model's tokenizer, which dies with the model, and building one for a known
 *   answer takes 3 to 32 ms (the same wrapper the resolution ends with).
 * Templates Hearth generates are answered from the known-template table (a specialized answer
 * is that wrapper with its default settings). Any other template is
 * resolved in a child process (chatWrapperKindEarly), when the server starts and while the model
 * loads. A specialized answer comes with the type and settings that rebuild it
 * (specializedChoice.ts), and that wrapper is built and kept here at once; only an answer
 * without them is resolved again on this thread.
 */
const resolved = new Map<string, { wrapper: ChatWrapper } | "jinjaTemplate">();
/** Files being resolved off the event loop, by file key: a load waits for the same answer. */
const resolving = new Map<string, Promise<ChatWrapperKind | undefined>>();

/** The child process's answer for one file. */
export type ChildAnswer = Omit<ChatWrapperAnswer, "file" | "kind"> & { kind: ChatWrapperKind };

/** The file's chat wrapper; `early` is chatWrapperKindEarly's promise, when started before the model loaded. */
export async function chatWrapperFor(file: string, model: LlamaModel, early = chatWrapperKindEarly(file)): Promise<ChatWrapper> {
  // A Jinja answer from the child process is kept for the file by then.
  await early;
  const key = modelFileKey(file);
  const known = key === undefined ? undefined : resolved.get(key);
  if (known !== undefined && known !== "jinjaTemplate") return known.wrapper;
  const metadata = model.fileInfo.metadata;
  const template = metadata.tokenizer?.chat_template;
  const knownAnswer = typeof template === "string" ? knownChatWrapper(template, metadata.general?.architecture) : undefined;
  if (known === "jinjaTemplate" || knownAnswer === "jinjaTemplate") {
    if (key !== undefined) resolved.set(key, "jinjaTemplate");
    // Falls back to the full resolution by itself if the template does not build.
    return resolveChatWrapper(model, { type: "jinjaTemplate" });
  }
  if (knownAnswer !== undefined) {
    // The analysis picks this wrapper with its default settings (knownChatFeatures.test.ts): built
    // in a few milliseconds instead of the analysis's 0.1 to 0.3 s on the event loop.
    try {
      const wrapper = buildSpecialized({ type: knownAnswer, settings: {} });
      if (key !== undefined) resolved.set(key, { wrapper });
      return wrapper;
    } catch {
      // A node-llama-cpp that no longer builds it by name: the full resolution below.
    }
  }
  const wrapper = resolveChatWrapper(model);
  if (key !== undefined) resolved.set(key, wrapper instanceof JinjaTemplateChatWrapper ? "jinjaTemplate" : { wrapper });
  return wrapper;
}

/**
 * Resolves a model file's chat wrapper in a child process (resolveChatWrapperKinds) when nothing
 * known answers it (no resolution kept for the file, a template not in the known-template table;
 * the template is read from the file's header), and keeps a Jinja answer for the file. Started
 * when a model starts loading, so that the resolution runs beside the load (and joined if the
 * server's start began it, chatWrapperKindsEarly); undefined when no resolution was needed or
 * none could be had. A file without a template is left alone: its resolution only reads the
 * model's names.
 */
export function chatWrapperKindEarly(file: string): Promise<ChatWrapperKind | undefined> {
  const key = modelFileKey(file);
  if (key === undefined || resolved.has(key)) return Promise.resolve(undefined);
  return resolving.get(key) ?? track(key, (async () => ((await needsResolution(file)) ? resolveChatWrapperKinds([file]).get(file) : undefined))());
}

/**
 * chatWrapperKindEarly for the registry's GGUF chat models when the server starts, in one child
 * process, one file after another; resolves when all are answered.
 */
export async function chatWrapperKindsEarly(files: readonly string[]): Promise<void> {
  const wanted: { file: string; key: string }[] = [];
  for (const file of new Set(files)) {
    const key = modelFileKey(file);
    if (key === undefined || resolved.has(key) || resolving.has(key)) continue;
    if (await needsResolution(file)) wanted.push({ file, key });
  }
  if (wanted.length === 0) return;
  const answers = resolveChatWrapperKinds(wanted.map(({ file }) => file));
  await Promise.all(wanted.map(({ file, key }) => resolving.get(key) ?? track(key, answers.get(file)!)));
}

/** Whether a file's template is one the known-template table does not answer (read from its header; false if it cannot be read). */
async function needsResolution(file: string): Promise<boolean> {
  try {
    const metadata = (await readGgufScalarMetadata(file)) as { tokenizer?: { chat_template?: unknown }; general?: { architecture?: unknown } };
    const template = metadata.tokenizer?.chat_template;
    const architecture = typeof metadata.general?.architecture === "string" ? metadata.general.architecture : undefined;
    return typeof template === "string" && template.trim() !== "" && knownChatWrapper(template, architecture) === undefined;
  } catch {
    return false;
  }
}

/**
 * A resolution in progress for a file: a Jinja answer is kept for it when it comes, and a
 * specialized one that names its type and settings as the wrapper they build.
 */
function track(key: string, answer: Promise<ChildAnswer | undefined> | undefined): Promise<ChatWrapperKind | undefined> {
  const tracked = (async () => {
    const child = await answer;
    if (child?.kind === "jinjaTemplate") resolved.set(key, "jinjaTemplate");
    else if (child?.specialized) {
      try {
        resolved.set(key, { wrapper: buildSpecialized(child.specialized) });
      } catch {
        // Left to the full resolution at the load.
      }
    }
    return child?.kind;
  })().finally(() => resolving.delete(key));
  resolving.set(key, tracked);
  return tracked;
}

/** Where a model file's chat wrapper stands in this process (tests, diagnostics). */
export function chatWrapperResolution(file: string): "kept" | "resolving" | undefined {
  const key = modelFileKey(file);
  if (key === undefined) return undefined;
  return resolved.has(key) ? "kept" : resolving.has(key) ? "resolving" : undefined;
}

/**
 * node-llama-cpp's full resolution for each file, in a child process (chatWrapperChild.ts) that
 * reads the files' vocabularies one after another and ends; each answer is undefined if the file
 * could not be resolved or the process failed (the caller then resolves on its own thread). The
 * process's start, about 1.2 s (node-llama-cpp's import and binding), overlaps a model's own load.
 */
export function resolveChatWrapperKinds(files: readonly string[]): Map<string, Promise<ChildAnswer | undefined>> {
  const settle = new Map<string, (answer: ChildAnswer | undefined) => void>();
  const answers = new Map(files.map((file) => [file, new Promise<ChildAnswer | undefined>((resolve) => settle.set(file, resolve))]));
  const settleRest = () => {
    for (const resolve of settle.values()) resolve(undefined);
    settle.clear();
  };
  try {
    const entry = fileURLToPath(CHILD);
    // Sources run through tsx (tests) need it in the child too; the compiled copy runs as it is.
    const child = fork(entry, [...files], { execArgv: /\.[mc]?ts$/.test(entry) ? ["--import", "tsx"] : [], stdio: ["ignore", "ignore", "ignore", "ipc"] });
    const timer = setTimeout(() => child.kill(), CHILD_TIMEOUT_MS).unref();
    child.on("message", ({ file, kind, specialized }: ChatWrapperAnswer) => {
      settle.get(file)?.(kind === null ? undefined : { kind, ...(specialized ? { specialized } : {}) });
      settle.delete(file);
    });
    child.on("error", settleRest);
    child.on("exit", () => {
      clearTimeout(timer);
      settleRest();
    });
    // Never what keeps the server's process alive.
    child.unref();
    child.channel?.unref();
  } catch {
    settleRest();
  }
  return answers;
}

const CHILD = siblingModule(import.meta.url, "chatWrapperChild");
/** Past this the child is stopped and its files resolved on the event loop (a template rendering without end, say). */
const CHILD_TIMEOUT_MS = 120_000;
