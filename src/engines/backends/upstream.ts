import { SpeechSettings, UpstreamSettings } from "../../config/backendSettings.js";
import type { BackendDescriptor } from "../BackendDescriptor.js";

const chatEngine = () => import("../upstream/UpstreamChatEngine.js");

/**
 * Another server speaking the same standard (another Hearth, vLLM, llama-server, a hosted
 * provider): text and speech requests are relayed to it. Nothing runs or is held here.
 */
export const upstreamBackend: BackendDescriptor = {
  serves: ["tts", "text"],
  settings: { upstream: UpstreamSettings, speech: SpeechSettings },
  entryProblems: (entry) => (entry.upstream ? [] : [{ path: "upstream", message: "an upstream model needs upstream.baseUrl or upstream.baseUrlEnv" }]),
  servable(entry) {
    if (entry.upstream?.baseUrl) return { servable: true };
    const variable = entry.upstream?.baseUrlEnv;
    return { servable: false, reason: variable ? `${variable} is not set` : "no upstream.baseUrl" };
  },
  remoteHost: (entry) => (entry.upstream?.baseUrl ? new URL(entry.upstream.baseUrl).host : undefined),
  load: async (entry) =>
    entry.type === "text" ? (await chatEngine()).UpstreamChatEngine.load(entry) : (await import("../upstream/UpstreamSpeechEngine.js")).UpstreamSpeechEngine.load(entry),
  estimateMemory: async () => ({ ramBytes: 0, vramBytes: 0 }),
  // What its configuration says: GET /models never calls the upstream.
  probeChatFeatures: async (entry) => (await chatEngine()).upstreamChatFeatures(entry.upstream),
  // The upstream's window: learned when the engine loaded, else configured, else the default.
  contextSize: async (entry, loaded) => (loaded?.kind === "chat" ? loaded.contextSize : (entry.upstream?.contextSize ?? (await chatEngine()).UPSTREAM_DEFAULT_CONTEXT_SIZE)),
  // An upstream has no voice files: the registry lists its voices, and it speaks the standard's names itself.
  listVoices: (entry) => entry.speech.voices ?? [],
  standardVoiceMap: () => ({}),
};
