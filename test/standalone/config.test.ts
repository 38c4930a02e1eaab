import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadModelsConfig, loadServerConfig } from "../../src/config.js";

describe("configuration", () => {
  it("takes flags over environment over defaults", () => {
    const env = { HEARTH_PORT: "9000", HEARTH_HOST: "0.0.0.0" };
    const fromEnv = loadServerConfig({}, env);
    expect(fromEnv).toMatchObject({ port: 9000, host: "0.0.0.0", logLevel: "info" });
    expect(loadServerConfig({ port: "9100" }, env).port).toBe(9100);
    expect(loadServerConfig({}, {})).toMatchObject({ port: 8080, host: "127.0.0.1" });
    expect(() => loadServerConfig({ port: "http" }, {})).toThrow(ConfigError);
  });

  it("falls back to the bundled demo registry, which validates", () => {
    const config = loadServerConfig({}, {});
    const registry = loadModelsConfig(config.configPath, "/var/hearth");
    expect(registry.models[0]!.file).toBe("/var/hearth/models/tiny-chat.gguf");
    expect(registry.models[0]!.generate).toBe("tiny-chat");
  });

  it.each([
    [{ models: [{ id: "x", type: "text", backend: "llama" }] }, "models.0.file"],
    [{ models: [{ id: "x", type: "text", backend: "nope", file: "a.gguf" }] }, "models.0.backend"],
    [{ models: [{ id: "a b", type: "text", backend: "llama", file: "a.gguf" }] }, "models.0.id"],
    [{ models: [{ id: "x", type: "text", backend: "llama", file: "a.gguf", llama: { sequences: 0 } }] }, "models.0.llama.sequences"],
    [{ models: [{ id: "x", type: "text", backend: "llama", file: "a" }, { id: "x", type: "text", backend: "llama", file: "b" }] }, "models.1.id"],
  ])("names the bad field of a broken registry (%#)", (json, field) => {
    const path = join(mkdtempSync(join(tmpdir(), "hearth-config-")), "models.config.json");
    writeFileSync(path, JSON.stringify(json));
    expect(() => loadModelsConfig(path, "/data")).toThrow(new RegExp(field.replaceAll(".", "\\.")));
  });

  it("resolves relative model files against the registry's directory", () => {
    const dir = mkdtempSync(join(tmpdir(), "hearth-config-"));
    const path = join(dir, "models.config.json");
    writeFileSync(path, JSON.stringify({ models: [{ id: "x", type: "text", backend: "llama", file: "weights/x.gguf" }] }));
    expect(loadModelsConfig(path, "/data").models[0]!.file).toBe(join(dir, "weights/x.gguf"));
  });
});
