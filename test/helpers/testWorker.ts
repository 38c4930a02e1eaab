import { InvalidRequestError } from "../../src/errors.js";
import { serveWorker } from "../../src/engines/worker/serveWorker.js";

/** A worker module for WorkerPool tests: echoes, spins through checkpoints or until its signal aborts, blocks without any, refuses, or dies. */
type Task =
  | { type: "echo"; value: unknown }
  | { type: "spin"; steps: number }
  | { type: "block"; ms: number }
  | { type: "watch-signal" }
  | { type: "crash" }
  | { type: "throw" }
  | { type: "refuse" };

serveWorker<{ greeting: string }, Task>({
  async load(data) {
    if ((data as { fail?: boolean }).fail) throw new Error("cannot load this model");
    return { context: { greeting: "hello" }, info: { loadedWith: data } };
  },
  async run(context, task, io) {
    switch (task.type) {
      case "echo":
        return { result: { greeting: context.greeting, value: task.value } };
      case "spin":
        for (let i = 0; i < task.steps; i++) {
          // Busy work that holds the worker's thread, like onnxruntime's run.
          const until = Date.now() + 5;
          while (Date.now() < until);
          io.emit({ step: i + 1 });
          await io.checkpoint();
        }
        return { result: "spun" };
      case "block": {
        // One long call that never reaches a checkpoint, like a library parsing a whole file.
        const until = Date.now() + task.ms;
        while (Date.now() < until);
        return { result: "blocked" };
      }
      case "watch-signal":
        // An engine that checks a signal between steps (as Whisper's seek loop does) and throws its own error.
        for (let step = 1; ; step++) {
          const until = Date.now() + 5;
          while (Date.now() < until);
          io.emit({ step });
          await new Promise((resolve) => setImmediate(resolve));
          if (io.signal.aborted) throw new Error(`stopped at step ${step}`);
        }
      case "crash":
        return process.exit(3);
      case "throw":
        throw new Error("the model said no");
      case "refuse":
        throw InvalidRequestError.forField(["language"], "Language xx is not supported");
    }
  },
});
