// onnxruntime sessions on a worker thread; SessionHost and OffThreadSession are the main-thread side.
// onnxruntime-node runs a session synchronously on the thread that calls run(), so a session on the
// main thread would stop every other request (chat streams included) for each inference.
// Plain JavaScript on purpose: a worker does not inherit the parent's TypeScript loader, and
// registering one costs about 150 ms per worker under the tests.
import { parentPort } from "node:worker_threads";
import * as ort from "onnxruntime-node";

const port = parentPort;
const sessions = new Map();
const messageOf = (error) => String(error?.message ?? error);
const fail = (id, error) => port.postMessage({ type: "failed", id, message: messageOf(error) });

async function open({ id, session: sessionId, source, options }) {
  const session = await ort.InferenceSession.create(source, options);
  sessions.set(sessionId, session);
  port.postMessage({
    type: "done",
    id,
    result: {
      inputNames: [...session.inputNames],
      outputNames: [...session.outputNames],
      // JSON round trip: plain data whatever shape this onnxruntime version gives the metadata.
      inputMetadata: JSON.parse(JSON.stringify(session.inputMetadata ?? [])),
      outputMetadata: JSON.parse(JSON.stringify(session.outputMetadata ?? [])),
    },
  });
}

async function run({ id, session: sessionId, feeds, args }) {
  const session = sessions.get(sessionId);
  if (!session) throw new Error("the session was released");
  const tensors = Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, new ort.Tensor(t.type, t.data, t.dims)]));
  const outputs = await session.run(tensors, ...args);
  const result = {};
  const buffers = new Set();
  for (const [name, tensor] of Object.entries(outputs)) {
    result[name] = { type: tensor.type, dims: [...tensor.dims], data: tensor.data };
    if (ArrayBuffer.isView(tensor.data)) buffers.add(tensor.data.buffer);
  }
  try {
    // The outputs' memory moves to the main thread instead of being copied.
    port.postMessage({ type: "done", id, result }, [...buffers]);
  } catch {
    // A buffer that cannot move (memory onnxruntime still owns) is copied instead.
    port.postMessage({ type: "done", id, result });
  }
}

async function release({ id, session: sessionId }) {
  const session = sessions.get(sessionId);
  sessions.delete(sessionId);
  await session?.release();
  port.postMessage({ type: "done", id, result: null });
}

const handlers = { open, run, release };
port.on("message", (request) => {
  handlers[request.type](request).catch((error) => fail(request.id, error));
});
