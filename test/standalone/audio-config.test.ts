import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { loadServerConfig } from "../../src/config/serverSettings.js";
import { ModelManager } from "../../src/models/ModelManager.js";
import { testTempDir } from "../helpers/tempDir.js";

const registry = (models: unknown[]) => {
  const path = join(testTempDir("hearth-audio-config-"), "models.config.json");
  writeFileSync(path, JSON.stringify({ models }));
  return path;
};

describe("audio models in models.config.json", () => {
  it("ships tts-kokoro, a VITS, a Whisper and a MusicGen demo, and relayed ids served only once an upstream URL is set", () => {
    const path = loadServerConfig({}, {}).configPath;
    const plain = loadModelsConfig(path, "/var/hearth", {});
    const kokoro = plain.models.find((m) => m.id === "tts-kokoro")!;
    expect(kokoro).toMatchObject({ type: "tts", backend: "kokoro", file: "/var/hearth/models/tiny-kokoro", generate: "tiny-kokoro" });
    expect(kokoro.voiceCloning).toMatchObject({ encoder: "/var/hearth/models/tiny-speaker-encoder", generate: "tiny-speaker-encoder" });
    expect(plain.models.find((m) => m.id === "hearth-tiny-whisper")).toMatchObject({
      type: "asr",
      backend: "whisper",
      pricing: { per_audio_second: { usd: 0.0001, diem: 0.0001 } },
    });
    expect(plain.models.find((m) => m.id === "hearth-tiny-musicgen")).toMatchObject({
      type: "music",
      backend: "transformers",
      file: "/var/hearth/models/tiny-musicgen",
      generate: "tiny-musicgen",
      music: { minDurationSeconds: 1, maxDurationSeconds: 30, defaultDurationSeconds: 10, defaultFormat: "mp3" },
      pricing: { per_second: { usd: 0.0005, diem: 0.0005 } },
    });
    const relayedIds = [
      "tts-qwen3-0-6b",
      "tts-qwen3-1-7b",
      "tts-chatterbox-hd",
      "tts-orpheus",
      "tts-xai-v1",
      "tts-inworld-1-5-max",
      "tts-elevenlabs-turbo-v2-5",
      "tts-minimax-speech-02-hd",
      "tts-gemini-3-1-flash",
      "tts-gradium-v1",
    ];
    expect(plain.models.filter((m) => m.backend === "upstream").map((m) => m.id)).toEqual(relayedIds);

    const unset = new ModelManager(plain, { gpu: false });
    expect(unset.list().map((m) => m.id)).toEqual([
      "hearth-tiny-chat",
      "hearth-tiny-reasoning",
      "hearth-tiny-vision",
      "hearth-tiny-sd",
      "hearth-tiny-sd-inpaint",
      "hearth-tiny-video",
      "hearth-tiny-upscale",
      "hearth-tiny-background-removal",
      "hearth-tiny-embedding",
      "hearth-tiny-embedding-gguf",
      "tts-kokoro",
      "tts-vits",
      "hearth-tiny-whisper",
      "hearth-tiny-musicgen",
    ]);
    expect(unset.skipped.map((s) => s.id)).toEqual(relayedIds);

    const withUpstream = loadModelsConfig(path, "/var/hearth", { HEARTH_TTS_UPSTREAM_URL: "https://speech.example/api/v1", HEARTH_TTS_UPSTREAM_KEY: "sk-up" });
    const qwen = withUpstream.models.find((m) => m.id === "tts-qwen3-0-6b")!;
    expect(qwen.upstream).toMatchObject({ baseUrl: "https://speech.example/api/v1", apiKey: "sk-up" });
    expect(qwen.speech).toMatchObject({ supportsPromptParam: true, supportsTemperatureParam: true, supportsTopPParam: true });
    expect(new ModelManager(withUpstream, { gpu: false }).list()).toHaveLength(24);
  });

  it.each([
    [{ id: "x", type: "tts", backend: "kokoro" }, "models.0.file"],
    [{ id: "x", type: "asr", backend: "kokoro", file: "k" }, "models.0.backend"],
    [{ id: "x", type: "tts", backend: "upstream" }, "models.0.upstream"],
    [{ id: "x", type: "tts", backend: "vits", file: "v", voiceCloning: { encoder: "e" } }, "models.0.voiceCloning"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", pricing: { per_audio_second: { usd: 1, diem: 1 } } }, "models.0.pricing"],
    [{ id: "x", type: "asr", backend: "whisper", file: "w", pricing: { per_thousand_characters: { usd: 1, diem: 1 } } }, "models.0.pricing"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", speech: { voices: ["a"], defaultVoice: "b" } }, "models.0.speech.defaultVoice"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", speech: { supportedFormats: ["wav"] } }, "models.0.speech.defaultFormat"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", speech: { supportedFormats: ["ogg"] } }, "models.0.speech.supportedFormats"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", speech: { voices: ["a"], voiceAliases: { alloy: "b" } } }, "models.0.speech.voiceAliases.alloy"],
    [{ id: "x", type: "tts", backend: "kokoro", file: "k", aliases: ["x"] }, "models.0.aliases.0"],
    [{ id: "x", type: "music", backend: "transformers", file: "m", music: { defaultDurationSeconds: 40 } }, "models.0.music.defaultDurationSeconds"],
    [{ id: "x", type: "music", backend: "transformers", file: "m", music: { durationOptions: [5, 15] } }, "models.0.music.durationOptions"],
    [{ id: "x", type: "music", backend: "transformers", file: "m", music: { durationOptions: [10, 60] } }, "models.0.music.durationOptions"],
    [{ id: "x", type: "music", backend: "transformers", file: "m", music: { supportedFormats: ["wav"] } }, "models.0.music.defaultFormat"],
    [{ id: "x", type: "music", backend: "transformers", file: "m", pricing: { per_thousand_characters: { usd: 1, diem: 1 } } }, "models.0.pricing"],
    [{ id: "x", type: "music", backend: "kokoro", file: "m" }, "models.0.backend"],
  ])("names the bad field of an audio entry (%#)", (entry, field) => {
    expect(() => loadModelsConfig(registry([entry]), "/data", {})).toThrow(new RegExp(field.replaceAll(".", "\\.")));
  });

  it("accepts ids with '/' segments, as the reference's transcription models have", () => {
    const config = loadModelsConfig(registry([{ id: "openai/whisper-large-v3", type: "asr", backend: "whisper", file: "{dataDir}/whisper-large-v3" }]), "/data", {});
    expect(config.models[0]).toMatchObject({ id: "openai/whisper-large-v3", file: "/data/whisper-large-v3" });
    expect(() => loadModelsConfig(registry([{ id: "a//b", type: "asr", backend: "whisper", file: "w" }]), "/data", {})).toThrow(/models\.0\.id/);
  });

  it("refuses an alias another model already has, and resolves aliases and standard names by type", () => {
    const whisper = (id: string, extra: object = {}) => ({ id, type: "asr", backend: "whisper", file: "w", ...extra });
    expect(() => loadModelsConfig(registry([whisper("a", { aliases: ["whisper-1"] }), whisper("b", { aliases: ["whisper-1"] })]), "/data", {})).toThrow(
      /models\.1\.aliases\.0.*"whisper-1" already names the model "a"/,
    );
    expect(() => loadModelsConfig(registry([whisper("a"), whisper("b", { aliases: ["a"] })]), "/data", {})).toThrow(/models\.1\.aliases\.0/);
    const models = new ModelManager(
      loadModelsConfig(registry([whisper("a"), whisper("b", { aliases: ["gpt-4o-transcribe", "my-asr"] }), { id: "k", type: "tts", backend: "kokoro", file: "k" }]), "/data", {}),
      { gpu: false },
    );
    expect(models.get("whisper-1", "asr").id).toBe("a");
    expect(models.get("gpt-4o-transcribe", "asr").id).toBe("b");
    expect(models.get("my-asr").id).toBe("b");
    expect(models.get("tts-1").id).toBe("k");
    expect(() => models.get("tts-1", "asr")).toThrow(/"tts-1" does not exist as an ASR model/);
    expect(() => models.get("dall-e-3")).toThrow(/does not exist/);
    expect(models.aliasesOf(models.get("a"))).toEqual(["whisper-1", "gpt-4o-mini-transcribe"]);
    expect(models.compatibilityMapping()).toEqual([
      { name: "gpt-4o-transcribe", model: "b", type: "asr", source: "alias" },
      { name: "my-asr", model: "b", type: "asr", source: "alias" },
      { name: "tts-1", model: "k", type: "tts", source: "standard" },
      { name: "tts-1-hd", model: "k", type: "tts", source: "standard" },
      { name: "gpt-4o-mini-tts", model: "k", type: "tts", source: "standard" },
      { name: "whisper-1", model: "a", type: "asr", source: "standard" },
      { name: "gpt-4o-mini-transcribe", model: "a", type: "asr", source: "standard" },
    ]);
  });
});
