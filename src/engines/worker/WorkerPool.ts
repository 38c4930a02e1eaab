import { Worker, type TransferListItem } from "node:worker_threads";
import { ApiError, InferenceError, ModelAtCapacityError } from "../../errors.js";
import type { FromWorker, ToWorker, WorkerBootData } from "./protocol.js";

const BOOT = new URL("./workerBoot.mjs", import.meta.url);

export interface WorkerPoolOptions {
  /** The model id, for errors and logs. */
  name: string;
  /** The worker module (it calls serveWorker). */
  entry: URL;
  /** Given to the worker module's load(). */
  data: unknown;
  size: number;
  /** Tasks allowed to wait for a free worker; beyond this, run() throws 503. */
  maxWaiting: number;
  /** Workers do not keep the process alive (a process-wide pool nobody disposes). */
  unref?: boolean;
  /**
   * A running task that is aborted and has not ended this long after (work that never reaches a
   * checkpoint: a library parsing a file in one call) has its worker stopped and replaced, so
   * the worker is free for the next task; the task fails as aborted. Unset: it runs to its end.
   */
  stopAbortedAfterMs?: number;
}

export interface RunOptions {
  signal?: AbortSignal;
  onEvent?: (event: unknown) => void;
  transfer?: TransferListItem[];
}

export class TaskAbortedError extends Error {
  override name = "TaskAbortedError";
  constructor() {
    super("the task was aborted");
  }
}

/** A task's payload made once a worker is free for it (see runWhenFree). */
export type PreparePayload = () => Promise<{ payload: unknown; transfer?: TransferListItem[] }>;

interface Task {
  id: number;
  payload: unknown | PreparePayload;
  /** The payload is made by a PreparePayload, on a worker held for it meanwhile. */
  prepared: boolean;
  /** Posted to its worker (a prepared task is not while its payload is being made). */
  sent: boolean;
  options: RunOptions;
  enqueuedAt: number;
  startedAt?: number;
  resolve: (value: { result: unknown; queueMs: number }) => void;
  reject: (error: unknown) => void;
  onAbort?: () => void;
  /** Armed when the running task is aborted (stopAbortedAfterMs). */
  stopTimer?: NodeJS.Timeout;
  /** Its worker was stopped because it did not end after its abort. */
  stopped?: boolean;
}

interface Slot {
  worker: Worker;
  task: Task | null;
  /** Tasks run beside the queue (call()), by id. */
  calls: Map<number, { resolve: (result: unknown) => void; reject: (error: unknown) => void }>;
  alive: boolean;
}

/**
 * A fixed set of worker threads, each holding its own copy of a model (loaded once by the
 * worker module), with a bounded FIFO of tasks in front. Work that would hold the event loop
 * (onnxruntime's run does) happens there, so the server keeps answering other requests.
 * A worker that dies fails its task and is replaced.
 */
export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private disposed = false;
  /** Workers being started in place of lost ones, and the calls waiting for one of them. */
  private restarting = 0;
  private callsAwaitingWorker: (() => void)[] = [];
  /** What the workers reported once loaded (the first one's). */
  info: unknown = null;

  private constructor(private readonly options: WorkerPoolOptions) {}

  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    try {
      for (let i = 0; i < options.size; i++) pool.slots.push(await pool.spawn());
    } catch (error) {
      await pool.dispose();
      throw error;
    }
    return pool;
  }

  stats(): { workers: number; busy: number; waiting: number } {
    return { workers: this.slots.filter((s) => s.alive).length, busy: this.slots.filter((s) => s.task).length, waiting: this.waiting.length };
  }

  run<R>(payload: unknown, options: RunOptions = {}): Promise<{ result: R; queueMs: number }> {
    return this.enqueue(payload, false, options);
  }

  /**
   * As run(), with the payload made by `prepare` once a worker is free for the task (the worker
   * waits for it): a task whose input is large once made (hours of audio, decoded) waits in the
   * queue small. What `prepare` throws fails the task; `options.transfer` is not used (prepare
   * names what to transfer).
   */
  runWhenFree<R>(prepare: PreparePayload, options: RunOptions = {}): Promise<{ result: R; queueMs: number }> {
    return this.enqueue(prepare, true, options);
  }

  private enqueue<R>(payload: unknown, prepared: boolean, options: RunOptions): Promise<{ result: R; queueMs: number }> {
    if (this.disposed) return Promise.reject(new InferenceError(`The model "${this.options.name}" is shutting down`));
    if (options.signal?.aborted) return Promise.reject(new TaskAbortedError());
    const free = this.slots.find((s) => s.alive && !s.task);
    if (!free && this.waiting.length >= this.options.maxWaiting) return Promise.reject(new ModelAtCapacityError(this.options.name));
    return new Promise((resolve, reject) => {
      const task: Task = { id: this.nextId++, payload, prepared, sent: false, options, enqueuedAt: performance.now(), resolve: resolve as Task["resolve"], reject };
      if (options.signal) {
        task.onAbort = () => this.abort(task);
        options.signal.addEventListener("abort", task.onAbort, { once: true });
      }
      if (free) this.dispatch(free, task);
      else this.waiting.push(task);
    });
  }

  /**
   * Runs a short task now, beside the task a worker may be running, not behind the queue: the
   * worker takes it between that task's awaited steps (an engine's planning of a request, which
   * has to answer before the request can queue). Not counted in stats(); fails like run() when
   * no worker is alive, and with the pool.
   */
  call<R>(payload: unknown, options: Pick<RunOptions, "transfer"> = {}): Promise<R> {
    if (this.disposed) return Promise.reject(new InferenceError(`The model "${this.options.name}" is shutting down`));
    const slot = this.slots.find((s) => s.alive && !s.task) ?? this.slots.find((s) => s.alive);
    if (!slot && this.restarting > 0) {
      // Every worker is being replaced (one crashed): the call goes to the first that comes up.
      return new Promise((resolve, reject) => this.callsAwaitingWorker.push(() => this.call<R>(payload, options).then(resolve, reject)));
    }
    if (!slot) return Promise.reject(new InferenceError(`The ${this.options.name} workers could not be restarted`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.calls.set(id, { resolve: resolve as (result: unknown) => void, reject });
      try {
        slot.worker.postMessage({ type: "run", id, task: payload } satisfies ToWorker, options.transfer);
      } catch (error) {
        // A payload that cannot be cloned never reached the worker.
        slot.calls.delete(id);
        reject(error);
      }
    });
  }

  /**
   * Whether run() would take `more` tasks beyond those it holds (free workers, then room in the
   * queue) rather than answer 503: a caller counts the requests it has promised places to.
   */
  hasRoom(more = 1): boolean {
    const free = this.slots.filter((s) => s.alive && !s.task).length;
    return free + this.options.maxWaiting - this.waiting.length >= more;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    // Sent again, they find the pool shutting down.
    for (const send of this.callsAwaitingWorker.splice(0)) send();
    for (const task of this.waiting.splice(0)) this.finish(task, () => task.reject(new InferenceError(`The model "${this.options.name}" was unloaded`)));
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.alive = false;
        const task = slot.task;
        slot.task = null;
        if (task) this.finish(task, () => task.reject(new InferenceError(`The model "${this.options.name}" was unloaded`)));
        this.failCalls(slot, new InferenceError(`The model "${this.options.name}" was unloaded`));
        await slot.worker.terminate();
      }),
    );
  }

  private spawn(): Promise<Slot> {
    const boot: WorkerBootData = { entry: this.options.entry.href, data: this.options.data };
    const worker = new Worker(BOOT, { workerData: boot, name: `hearth:${this.options.name}` });
    if (this.options.unref) worker.unref();
    const slot: Slot = { worker, task: null, calls: new Map(), alive: false };
    return new Promise((resolve, reject) => {
      let loaded = false;
      worker.on("message", (message: FromWorker) => {
        if (message.type === "ready") {
          loaded = true;
          slot.alive = true;
          this.info ??= message.info;
          resolve(slot);
          return;
        }
        if (message.type === "load-failed") {
          void worker.terminate();
          reject(new Error(message.message));
          return;
        }
        this.onTaskMessage(slot, message);
      });
      worker.on("error", (error) => {
        if (!loaded) reject(error);
        else this.onWorkerLost(slot, error.message);
      });
      worker.on("exit", (code) => {
        if (!loaded) reject(new Error(`the worker exited with code ${code} while loading`));
        else if (slot.alive) this.onWorkerLost(slot, `exited with code ${code}`);
      });
    });
  }

  private dispatch(slot: Slot, task: Task): void {
    slot.task = task;
    task.startedAt = performance.now();
    if (task.prepared) {
      void this.prepareAndSend(slot, task, task.payload as PreparePayload);
      return;
    }
    this.send(slot, task, task.payload, task.options.transfer);
  }

  private send(slot: Slot, task: Task, payload: unknown, transfer: readonly TransferListItem[] | undefined): void {
    task.sent = true;
    slot.worker.postMessage({ type: "run", id: task.id, task: payload } satisfies ToWorker, transfer);
  }

  private async prepareAndSend(slot: Slot, task: Task, prepare: PreparePayload): Promise<void> {
    let prepared: Awaited<ReturnType<PreparePayload>>;
    try {
      prepared = await prepare();
    } catch (error) {
      // Unless the task already ended (aborted, or its worker lost), it fails with what prepare threw.
      if (slot.task !== task) return;
      slot.task = null;
      this.finish(task, () => task.reject(error));
      this.next(slot);
      return;
    }
    if (slot.task !== task) return;
    try {
      this.send(slot, task, prepared.payload, prepared.transfer);
    } catch (error) {
      // A payload that cannot be cloned never reached the worker.
      slot.task = null;
      this.finish(task, () => task.reject(error));
      this.next(slot);
    }
  }

  private onTaskMessage(slot: Slot, message: FromWorker): void {
    if (!("id" in message)) return;
    const call = slot.calls.get(message.id);
    if (call) {
      if (message.type === "event") return;
      slot.calls.delete(message.id);
      if (message.type === "done") call.resolve(message.result);
      else if (message.type === "failed") call.reject(taskError(message));
      return;
    }
    const task = slot.task;
    if (!task || message.id !== task.id) return;
    if (message.type === "event") {
      task.options.onEvent?.(message.event);
      return;
    }
    slot.task = null;
    const queueMs = (task.startedAt ?? task.enqueuedAt) - task.enqueuedAt;
    if (message.type === "done") this.finish(task, () => task.resolve({ result: message.result, queueMs }));
    else if (message.type === "failed") this.finish(task, () => task.reject(taskError(message)));
    this.next(slot);
  }

  private failCalls(slot: Slot, error: Error): void {
    for (const call of slot.calls.values()) call.reject(error);
    slot.calls.clear();
  }

  private next(slot: Slot): void {
    const task = this.waiting.shift();
    if (task && slot.alive) this.dispatch(slot, task);
    else if (task) this.waiting.unshift(task);
  }

  private abort(task: Task): void {
    const queued = this.waiting.indexOf(task);
    if (queued >= 0) {
      this.waiting.splice(queued, 1);
      this.finish(task, () => task.reject(new TaskAbortedError()));
      return;
    }
    const slot = this.slots.find((s) => s.task === task);
    if (!slot) return;
    if (task.sent) {
      slot.worker.postMessage({ type: "cancel", id: task.id } satisfies ToWorker);
      const grace = this.options.stopAbortedAfterMs;
      if (grace !== undefined) {
        task.stopTimer = setTimeout(() => {
          if (slot.task !== task) return;
          task.stopped = true;
          // Its exit fails the task (as aborted) and starts a replacement (onWorkerLost).
          void slot.worker.terminate();
        }, grace);
        task.stopTimer.unref();
      }
      return;
    }
    // Its payload is still being made: the worker never saw it, and is free for the next task.
    slot.task = null;
    this.finish(task, () => task.reject(new TaskAbortedError()));
    this.next(slot);
  }

  private finish(task: Task, settle: () => void): void {
    if (task.onAbort) task.options.signal?.removeEventListener("abort", task.onAbort);
    clearTimeout(task.stopTimer);
    settle();
  }

  /** A worker crashed: fail its task, replace it, and keep serving the queue. */
  private onWorkerLost(slot: Slot, reason: string): void {
    slot.alive = false;
    const task = slot.task;
    slot.task = null;
    if (task) {
      this.finish(task, () => task.reject(task.stopped ? new TaskAbortedError() : new InferenceError(`Inference processing failed: the ${this.options.name} worker ${reason}`)));
    }
    this.failCalls(slot, new InferenceError(`Inference processing failed: the ${this.options.name} worker ${reason}`));
    if (this.disposed) return;
    const index = this.slots.indexOf(slot);
    this.restarting++;
    this.spawn().then(
      (replacement) => {
        this.restarting--;
        if (this.disposed) {
          void replacement.worker.terminate();
          return;
        }
        this.slots[index] = replacement;
        this.next(replacement);
        for (const send of this.callsAwaitingWorker.splice(0)) send();
      },
      () => {
        this.restarting--;
        if (this.slots.every((s) => !s.alive)) {
          for (const waiting of this.waiting.splice(0)) this.finish(waiting, () => waiting.reject(new InferenceError(`The ${this.options.name} workers could not be restarted`)));
          // Sent again, they find no worker and no restart, and fail.
          if (this.restarting === 0) for (const send of this.callsAwaitingWorker.splice(0)) send();
        }
      },
    );
  }
}

/** The error a task's failure message stands for on this side. */
function taskError(message: Extract<FromWorker, { type: "failed" }>): Error {
  if (message.name === "TaskCancelledError") return new TaskAbortedError();
  if (message.clientError) return Object.assign(new ApiError(message.clientError.status, message.message, message.clientError.extra), { name: message.name });
  return new InferenceError(`Inference processing failed: ${message.message}`);
}
