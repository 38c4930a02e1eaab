import { EmbeddingSettings, LlamaSettings } from "../../config/backendSettings.js";
import { alwaysServable, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";

/** llama.cpp through node-llama-cpp: GGUF chat and embedding models. */
export const llamaBackend: BackendDescriptor = {
  serves: ["text", "embedding"],
  settings: { llama: LlamaSettings, embedding: EmbeddingSettings },
  entryProblems: needsFile("a llama model needs a GGUF file"),
  servable: alwaysServable,
  async load(entry, options) {
    if (entry.type === "embedding") return (await import("../llama/LlamaEmbeddingEngine.js")).LlamaEmbeddingEngine.load(entry, options.gpu);
    const { LlamaChatEngine } = await import("../llama/LlamaChatEngine.js");
    return LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: options.gpu });
  },
  // Loading llama.cpp's binding (and its CPU, CUDA or Vulkan backend) takes about 0.6 s, and
  // resolving a chat template Hearth does not know up to 3.6 s (in a child process), which the
  // first request to a GGUF model would otherwise wait for.
  prepare: async ({ gpu }, entries) => {
    const llama = await (await import("../llama/getSharedLlama.js")).getSharedLlama(gpu);
    const { cpuDecodePoolNotice } = await import("../llama/threadsForBatch.js");
    const { chatWrapperKindsEarly } = await import("../llama/chatWrapperCache.js");
    void chatWrapperKindsEarly(entries.flatMap((entry) => (entry.type === "text" && entry.file ? [entry.file] : [])));
    return cpuDecodePoolNotice(llama.gpu === false);
  },
  estimateMemory: async (entry, gpu) => (await import("../llama/estimateGgufMemory.js")).estimateGgufMemory(entry, gpu),
  memoryKey: async (entry, gpu) => (await import("../llama/estimateGgufMemory.js")).ggufMemoryKey(entry, gpu),
  // Read from the GGUF's chat template; what Hearth renders itself (JSON schema grammars, logprobs) always works.
  probeChatFeatures: async (entry) => ({ ...(await (await import("../llama/probeChatFeatures.js")).probeChatFeatures(entry.file!)), responseSchema: true, logprobs: true }),
  contextSize: async (entry) => entry.llama.contextSize,
  visualInput: () => ({
    kind: "none",
    reason:
      "GGUF models run on node-llama-cpp 3.22 here, which has no multimodal input (it is planned for node-llama-cpp 4); " +
      'to ask about pictures, use an ONNX vision-language model (backend "transformers", e.g. hearth-tiny-vision) or an upstream model that declares vision (upstream.features.vision)',
  }),
};
