import { getLlama, JinjaTemplateChatWrapper, type Llama, LlamaLogLevel, resolveChatWrapper } from "node-llama-cpp";
import { serveWorker } from "../worker/serveWorker.js";

/**
 * Worker-thread side of chatWrapperKindOffThread: node-llama-cpp's full chat wrapper resolution
 * for a model file, on its vocabulary alone (its tokenizer and metadata are all the resolution
 * reads). The CPU binding only: nothing here touches a GPU.
 */
export interface ChatWrapperTask {
  file: string;
}

/** Whether the resolution ends with the Jinja template wrapper, or with one of the specialized ones. */
export type ChatWrapperKind = "jinjaTemplate" | "specialized";

serveWorker<Llama, ChatWrapperTask>({
  load: async () => ({ context: await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false }) }),
  run: async (llama, task) => {
    const model = await llama.loadModel({ modelPath: task.file, vocabOnly: true });
    try {
      const kind: ChatWrapperKind = resolveChatWrapper(model) instanceof JinjaTemplateChatWrapper ? "jinjaTemplate" : "specialized";
      return { result: kind };
    } finally {
      await model.dispose();
    }
  },
});
