import { EmbeddingSettings, SpeechSettings, UpstreamSettings } from "../../config/backendSettings.js";
import { upstreamReplicas } from "../../config/upstreamReplicas.js";
import type { BackendDescriptor } from "../BackendDescriptor.js";

const chatEngine = () => import("../upstream/UpstreamChatEngine.js");

/**
 * Another server speaking the same standard (another Hearth, vLLM, llama-server, a hosted
 * provider), or a pool of them: text, speech and embedding requests are relayed to it. Nothing
 * runs or is held here.
 */
export const upstreamBackend: BackendDescriptor = {
  serves: ["tts", "text", "embedding"],
  settings: { upstream: UpstreamSettings, speech: SpeechSettings, embedding: EmbeddingSettings },
  entryProblems: (entry) => (entry.upstream ? [] : [{ path: "upstream", message: "an upstream model needs upstream.baseUrl, upstream.baseUrlEnv or upstream.replicas" }]),
  servable(entry) {
    if (!entry.upstream) return { servable: false, reason: "no upstream.baseUrl" };
    // A pool serves only when every replica it lists can be reached: a missing variable is a mistake to see, not a smaller pool.
    const { unresolved } = upstreamReplicas(entry.upstream);
    return unresolved.length === 0 ? { servable: true } : { servable: false, reason: unresolved.join("; ") };
  },
  remoteHost: (entry) => {
    const replicas = entry.upstream ? upstreamReplicas(entry.upstream).replicas : [];
    return replicas.length === 0 ? undefined : replicas.map((replica) => new URL(replica.baseUrl).host).join(", ");
  },
  load: async (entry) => {
    if (entry.type === "text") return (await chatEngine()).UpstreamChatEngine.load(entry);
    if (entry.type === "embedding") return (await import("../upstream/UpstreamEmbeddingEngine.js")).UpstreamEmbeddingEngine.load(entry);
    return (await import("../upstream/UpstreamSpeechEngine.js")).UpstreamSpeechEngine.load(entry);
  },
  estimateMemory: async () => ({ ramBytes: 0, vramBytes: 0 }),
  // What its configuration says: GET /models never calls the upstream.
  probeChatFeatures: async (entry) => (await chatEngine()).upstreamChatFeatures(entry.upstream),
  // Declared in upstream.features: the parts go to the upstream as the caller wrote them.
  visualInput: (entry) => {
    const f = entry.upstream?.features;
    if (!f?.vision && !f?.videoInput)
      return { kind: "none", reason: "the upstream model is not declared to see pictures or video (upstream.features.vision / videoInput in the registry)" };
    return { kind: "relayed", maxImages: f.vision ? f.maxImages : 0, maxVideos: f.videoInput ? f.maxVideos : 0 };
  },
  // The upstream's window: learned when the engine loaded, else configured, else the default.
  contextSize: async (entry, loaded) => (loaded?.kind === "chat" ? loaded.contextSize : (entry.upstream?.contextSize ?? (await chatEngine()).UPSTREAM_DEFAULT_CONTEXT_SIZE)),
  // An upstream has no voice files: the registry lists its voices, and it speaks the standard's names itself.
  listVoices: (entry) => entry.speech.voices ?? [],
  standardVoiceMap: () => ({}),
  // The vector size is learned when the model loads (one short probe); the input limit is the registry's, if set.
  embeddingShape: (entry) => ({ maxInputTokens: entry.embedding.maxInputTokens }),
};
