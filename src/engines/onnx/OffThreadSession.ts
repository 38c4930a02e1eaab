import { AsyncLocalStorage } from "node:async_hooks";
import { isMainThread, Worker } from "node:worker_threads";
import * as ort from "onnxruntime-node";

const WORKER = new URL("./onnxSessionWorker.mjs", import.meta.url);

/** What engines use of an onnxruntime session; both ort.InferenceSession and OffThreadSession have it. */
export type SessionLike = Pick<ort.InferenceSession, "inputNames" | "outputNames" | "run" | "release">;

interface WireTensor {
  type: ort.Tensor.Type;
  dims: readonly number[];
  data: ort.Tensor.DataType;
}

interface SessionNames {
  inputNames: string[];
  outputNames: string[];
  inputMetadata: unknown[];
  outputMetadata: unknown[];
}

type ToSessionWorker =
  | { type: "open"; id: number; session: number; source: string | Uint8Array; options: ort.InferenceSession.SessionOptions }
  | { type: "run"; id: number; session: number; feeds: Record<string, WireTensor>; args: unknown[] }
  | { type: "release"; id: number; session: number };

type FromSessionWorker = { type: "done"; id: number; result: unknown } | { type: "failed"; id: number; message: string };

type Request = ToSessionWorker extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/**
 * A worker thread that holds onnxruntime sessions (those of one engine, usually) and runs them
 * in the order asked. onnxruntime-node's run() is synchronous native work on the calling thread
 * (its backend only defers it with setImmediate), so on the main thread every speech,
 * transcription or vision inference would stop every chat stream and every other request for
 * as long as it takes. A worker costs about 16 MiB and a moment to start, paid once per load;
 * it ends when its last session is released, and never keeps the process alive while idle.
 */
export class SessionHost {
  private readonly worker = new Worker(WORKER, { name: "hearth:onnxruntime" });
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  private nextSession = 1;
  private open = 0;
  private failure: Error | null = null;

  constructor() {
    this.worker.on("message", (message: FromSessionWorker) => {
      const request = this.pending.get(message.id);
      if (!request) return;
      this.settled(message.id);
      if (message.type === "failed") request.reject(new Error(message.message));
      else request.resolve(message.result);
    });
    this.worker.on("error", (error) => this.stop(new Error(`the onnxruntime worker failed: ${error.message}`)));
    this.worker.on("exit", (code) => this.stop(new Error(`the onnxruntime worker exited (code ${code})`)));
    this.worker.unref();
  }

  /** Opens `source` (a model file's path or its bytes) on this host's thread. */
  async openSession(source: string | Uint8Array, options: ort.InferenceSession.SessionOptions = {}): Promise<OffThreadSession> {
    const session = this.nextSession++;
    this.open++;
    try {
      const names = (await this.request({ type: "open", session, source, options })) as SessionNames;
      return new OffThreadSession(this, session, names);
    } catch (error) {
      await this.closed();
      throw error;
    }
  }

  /** @internal OffThreadSession's way to the worker. */
  request(message: Request): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ ...message, id } as ToSessionWorker);
    });
  }

  /** @internal A session of this host was released: the last one ends the worker. */
  async closed(): Promise<void> {
    if (--this.open > 0) return;
    this.failure ??= new Error("the session was released");
    await this.worker.terminate();
  }

  /** Ends the worker now, with every session on it (a load that failed after opening some). */
  async discard(reason: Error): Promise<void> {
    this.stop(reason);
    await this.worker.terminate();
  }

  private settled(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.unref();
  }

  private stop(error: Error): void {
    this.failure ??= error;
    for (const request of this.pending.values()) request.reject(this.failure);
    this.pending.clear();
  }
}

/**
 * An onnxruntime session on a SessionHost's worker thread, used as an ort.InferenceSession is.
 * Inputs are copied to the worker (the caller keeps its tensors); outputs move back without a copy.
 */
export class OffThreadSession implements SessionLike {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly unknown[];
  readonly outputMetadata: readonly unknown[];
  private released: Promise<void> | null = null;

  /** @internal Made by SessionHost.openSession. */
  constructor(
    private readonly host: SessionHost,
    private readonly id: number,
    names: SessionNames,
  ) {
    this.inputNames = names.inputNames;
    this.outputNames = names.outputNames;
    this.inputMetadata = names.inputMetadata;
    this.outputMetadata = names.outputMetadata;
  }

  /** A session on a worker thread of its own. */
  static create(source: string | Uint8Array, options: ort.InferenceSession.SessionOptions = {}): Promise<OffThreadSession> {
    return new SessionHost().openSession(source, options);
  }

  async run(feeds: ort.InferenceSession.FeedsType, ...args: unknown[]): Promise<ort.InferenceSession.ReturnType> {
    if (this.released) throw new Error("the session was released");
    const wire = Object.fromEntries(Object.entries(feeds).map(([name, tensor]) => [name, toWire(name, tensor)]));
    const outputs = (await this.host.request({ type: "run", session: this.id, feeds: wire, args })) as Record<string, WireTensor>;
    return Object.fromEntries(Object.entries(outputs).map(([name, t]) => [name, new ort.Tensor(t.type, t.data as never, t.dims)]));
  }

  /** Frees the session (after the runs already asked for); the host's last session ends its worker. */
  release(): Promise<void> {
    this.released ??= this.host
      .request({ type: "release", session: this.id })
      .catch(() => {})
      .then(() => this.host.closed());
    return this.released;
  }
}

function toWire(name: string, tensor: ort.Tensor): WireTensor {
  if (tensor.location && tensor.location !== "cpu" && tensor.location !== "cpu-pinned") {
    throw new Error(`input "${name}" is on ${tensor.location}; an off-thread session takes tensors in CPU memory`);
  }
  return { type: tensor.type, dims: [...tensor.dims], data: tensor.data };
}

/** Which of the sessions a load opens go to worker threads (by model file), for the load running in this async context. */
const offThreadScope = new AsyncLocalStorage<{ offThread: (modelFile: string) => boolean; host?: SessionHost }>();
let patched = false;

/**
 * Runs `load` (an engine's load, through transformers.js or openSession) so that the sessions it
 * opens whose model file `offThread` accepts run on a worker thread; sessions opened anywhere
 * else are untouched. transformers.js opens its sessions itself (onnxruntime-node's InferenceSession.create,
 * the object this module imports, with a file path in Node), so create is wrapped once, and acts
 * only inside such a load: AsyncLocalStorage follows the load's own calls, not a concurrent one's.
 * The sessions of one load share one worker thread (an engine runs them one after another anyway).
 * A load that fails ends that thread with the sessions it had opened there: nothing else holds
 * them, and their weights would stay in memory until the process ends.
 *
 * Take what runs once per request (encoders, single-pass models), not a decoder that runs once
 * per generated token: each run copies its inputs to the worker, and a decoder's key/value cache
 * would be copied at every step.
 */
export function loadWithSessionsOffThread<T>(offThread: (modelFile: string) => boolean, load: () => Promise<T>): Promise<T> {
  if (!patched) {
    patched = true;
    const session = ort.InferenceSession as unknown as { create: (...args: unknown[]) => Promise<unknown> };
    const create = session.create.bind(session);
    session.create = (source: unknown, ...rest: unknown[]) => {
      const scope = offThreadScope.getStore();
      if (isMainThread && scope && typeof source === "string" && scope.offThread(source)) {
        scope.host ??= new SessionHost();
        return scope.host.openSession(source, (rest[0] ?? {}) as ort.InferenceSession.SessionOptions);
      }
      return create(source, ...rest);
    };
  }
  const scope: { offThread: (modelFile: string) => boolean; host?: SessionHost } = { offThread };
  return offThreadScope.run(scope, async () => {
    try {
      return await load();
    } catch (error) {
      await scope.host?.discard(new Error("the load that opened this session failed"));
      throw error;
    }
  });
}

/** loadWithSessionsOffThread's choice for models whose every session runs once per request (or per tile). */
export const everySession = () => true;
