import { OnnxSettings, SpeechSettings, VoiceCloningSettings } from "../../config/backendSettings.js";
import { alwaysServable, importEngineModules, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";
import { kokoroStandardVoices } from "../kokoro/kokoroStandardVoices.js";
import { listKokoroVoices } from "../kokoro/kokoroVoices.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";

/** Kokoro-style text-to-speech on onnxruntime (phonemes, style vectors; voice cloning with a speaker encoder). */
export const kokoroBackend: BackendDescriptor = {
  serves: ["tts"],
  settings: { onnx: OnnxSettings, speech: SpeechSettings, voiceCloning: VoiceCloningSettings },
  entryProblems: needsFile('a kokoro model needs its model directory in "file"'),
  servable: alwaysServable,
  load: async (entry, options) => (await import("../kokoro/KokoroEngine.js")).KokoroEngine.load(entry, options.gpu),
  prepare: importEngineModules(() => [import("../kokoro/KokoroEngine.js")]),
  estimateMemory: (entry, gpu) => estimateOnnxMemory(entry.file!, { copies: 1, executionProviders: entry.onnx.executionProviders, gpu }),
  // The voices/ folder says which voices exist; speech.voices may offer a subset.
  listVoices(entry) {
    const files = listKokoroVoices(entry.file!);
    return entry.speech.voices ? entry.speech.voices.filter((v) => files.includes(v)) : files;
  },
  // Picked by name and gender.
  standardVoiceMap: (_entry, voices) => kokoroStandardVoices(voices),
};
