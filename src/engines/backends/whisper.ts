import { OnnxSettings, TranscriptionSettings } from "../../config/backendSettings.js";
import { alwaysServable, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";

/** Whisper speech-to-text through transformers.js, on a worker thread of its own. */
export const whisperBackend: BackendDescriptor = {
  serves: ["asr"],
  settings: { onnx: OnnxSettings, transcription: TranscriptionSettings },
  entryProblems: needsFile('a whisper model needs its model directory in "file"'),
  servable: alwaysServable,
  load: async (entry, options) => (await import("../whisper/WhisperWorkerEngine.js")).WhisperWorkerEngine.load(entry, options.gpu),
  estimateMemory: (entry, gpu) => estimateOnnxMemory(entry.file!, { copies: 1, executionProviders: entry.onnx.executionProviders, gpu }),
};
