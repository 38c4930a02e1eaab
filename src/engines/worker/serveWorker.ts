import { parentPort, workerData, type TransferListItem } from "node:worker_threads";
import { ApiError } from "../../errors.js";
import type { FromWorker, ToWorker, WorkerBootData } from "./protocol.js";

export class TaskCancelledError extends Error {
  override name = "TaskCancelledError";
  constructor() {
    super("cancelled");
  }
}

export interface TaskIo {
  /** Sends an event to the task's caller (progress, a video frame...). */
  emit(event: unknown, transfer?: TransferListItem[]): void;
  /**
   * Lets queued messages (a cancel) in, then throws TaskCancelledError if the task was
   * cancelled. onnxruntime's run holds the thread, so long loops call this between steps.
   */
  checkpoint(): Promise<void>;
  /** Aborted when the caller cancels the task (for engines that watch a signal between steps). */
  signal: AbortSignal;
}

export interface WorkerHandlers<Context, Task> {
  load(data: unknown): Promise<{ context: Context; info?: unknown }>;
  run(context: Context, task: Task, io: TaskIo): Promise<{ result: unknown; transfer?: TransferListItem[] }>;
}

/** The worker side of a WorkerPool: load once, then run the tasks the pool sends, one at a time. */
export function serveWorker<Context, Task>(handlers: WorkerHandlers<Context, Task>): void {
  const port = parentPort;
  if (!port) throw new Error("serveWorker must run in a worker thread");
  const post = (message: FromWorker, transfer?: TransferListItem[]) => port.postMessage(message, transfer);
  /** The running tasks' cancellation, by task id (a cancel that comes after its task finished finds none). */
  const controllers = new Map<number, AbortController>();
  const boot = workerData as WorkerBootData;

  void (async () => {
    let context: Context;
    try {
      const loaded = await handlers.load(boot.data);
      context = loaded.context;
      post({ type: "ready", info: loaded.info ?? null });
    } catch (error) {
      post({ type: "load-failed", message: (error as Error).message });
      return;
    }
    port.on("message", (message: ToWorker) => {
      if (message.type === "cancel") {
        controllers.get(message.id)?.abort(new TaskCancelledError());
        return;
      }
      const id = message.id;
      const controller = new AbortController();
      controllers.set(id, controller);
      const io: TaskIo = {
        signal: controller.signal,
        emit: (event, transfer) => post({ type: "event", id, event }, transfer),
        checkpoint: async () => {
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (controller.signal.aborted) throw new TaskCancelledError();
        },
      };
      handlers.run(context, message.task as Task, io).then(
        ({ result, transfer }) => {
          controllers.delete(id);
          post({ type: "done", id, result }, transfer);
        },
        (error: unknown) => {
          const wasCancelled = controller.signal.aborted;
          controllers.delete(id);
          const e = error instanceof Error ? error : new Error(String(error));
          // A cancelled task fails however the engine noticed it (its own abort error included).
          const name = wasCancelled ? "TaskCancelledError" : e.name;
          // A client error (a 4xx the engine found in the request) keeps its status and details.
          const clientError = e instanceof ApiError && e.status < 500 ? { status: e.status, extra: JSON.parse(JSON.stringify(e.extra)) } : undefined;
          post({ type: "failed", id, name, message: e.message, ...(clientError ? { clientError } : {}) });
        },
      );
    });
  })();
}
