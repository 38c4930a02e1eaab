import { OnnxSettings, SpeechSettings } from "../../config/backendSettings.js";
import { alwaysServable, importEngineModules, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";
import { everyStandardVoiceTo } from "../standardVoices.js";
import { vitsVoices } from "../vits/vitsVoices.js";

/** VITS (MMS-TTS style) text-to-speech through transformers.js. */
export const vitsBackend: BackendDescriptor = {
  serves: ["tts"],
  settings: { onnx: OnnxSettings, speech: SpeechSettings },
  entryProblems: needsFile('a vits model needs its model directory in "file"'),
  servable: alwaysServable,
  load: async (entry, options) => (await import("../vits/VitsEngine.js")).VitsEngine.load(entry, options.gpu),
  prepare: importEngineModules(() => [import("../vits/VitsEngine.js")]),
  estimateMemory: (entry, gpu) => estimateOnnxMemory(entry.file!, { copies: 1, executionProviders: entry.onnx.executionProviders, gpu }),
  listVoices: (entry) => vitsVoices(entry),
  // A VITS model has one speaker: every standard voice is it.
  standardVoiceMap: (entry, voices) => everyStandardVoiceTo(entry.speech.defaultVoice ?? voices[0]),
};
