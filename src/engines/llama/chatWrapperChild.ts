import { getLlama, JinjaTemplateChatWrapper, LlamaLogLevel, resolveChatWrapper } from "node-llama-cpp";
import { type SpecializedChoice, specializedChoiceOf } from "./specializedChoice.js";

/**
 * Child-process side of resolveChatWrapperKinds: node-llama-cpp's full chat wrapper resolution
 * for each model file named on the command line, on its vocabulary alone (its tokenizer and
 * metadata are all the resolution reads), each answer sent to the parent as it comes. A process
 * of its own, not a worker thread: node-llama-cpp's binding keeps process-wide state (llama.cpp's
 * logger, its backends, which a thread's exit would free under the server's models). The CPU
 * binding only: nothing here touches a GPU.
 */

/** Whether the resolution ends with the Jinja template wrapper, or with one of the specialized ones. */
export type ChatWrapperKind = "jinjaTemplate" | "specialized";

/** One answer: null when the file could not be read. */
export interface ChatWrapperAnswer {
  file: string;
  kind: ChatWrapperKind | null;
  /** For a specialized answer, the type and settings that build the same wrapper, when they can be told. */
  specialized?: SpecializedChoice;
}

async function main(files: readonly string[]): Promise<void> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false });
  for (const file of files) {
    let answer: ChatWrapperAnswer = { file, kind: null };
    try {
      const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
      try {
        const wrapper = resolveChatWrapper(model);
        answer = wrapper instanceof JinjaTemplateChatWrapper ? { file, kind: "jinjaTemplate" } : { file, kind: "specialized", specialized: specializedChoiceOf(wrapper) };
      } finally {
        await model.dispose();
      }
    } catch {
      answer = { file, kind: null };
    }
    process.send?.(answer);
  }
}

if (process.send) {
  // The parent gone, nothing is left to answer.
  process.on("disconnect", () => process.exit(0));
  await main(process.argv.slice(2));
  process.disconnect();
}
