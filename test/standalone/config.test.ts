import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/ConfigError.js";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";
import { loadServerConfig } from "../../src/config/serverSettings.js";
import { testTempDir } from "../helpers/tempDir.js";

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
    [
      {
        models: [
          { id: "x", type: "text", backend: "llama", file: "a" },
          { id: "x", type: "text", backend: "llama", file: "b" },
        ],
      },
      "models.1.id",
    ],
  ])("names the bad field of a broken registry (%#)", (json, field) => {
    const path = join(testTempDir("hearth-config-"), "models.config.json");
    writeFileSync(path, JSON.stringify(json));
    expect(() => loadModelsConfig(path, "/data")).toThrow(new RegExp(field.replaceAll(".", "\\.")));
  });

  it("resolves relative model files against the registry's directory", () => {
    const dir = testTempDir("hearth-config-");
    const path = join(dir, "models.config.json");
    writeFileSync(path, JSON.stringify({ models: [{ id: "x", type: "text", backend: "llama", file: "weights/x.gguf" }] }));
    expect(loadModelsConfig(path, "/data").models[0]!.file).toBe(join(dir, "weights/x.gguf"));
  });

  describe("wallet settings", () => {
    const example = join(PACKAGE_ROOT, "wallet.config.example.json");
    const settlerKey = `0x${"11".repeat(32)}`;

    it("has no wallet rails by default, and takes the public URL from flags or environment", () => {
      const config = loadServerConfig({}, {});
      expect(config.publicUrl).toBeUndefined();
      expect(config.wallet.x402.settlement).toBeUndefined();
      expect(config.wallet.rpc.networks).toEqual({});
      expect(loadServerConfig({}, { HEARTH_PUBLIC_URL: "https://ai.example.com" }).publicUrl).toBe("https://ai.example.com");
      expect(() => loadServerConfig({ publicUrl: "ftp://x" }, {})).toThrow(ConfigError);
    });

    it("loads the example wallet config; onchain settlement needs the settler key, which comes from the environment", () => {
      expect(() => loadServerConfig({ walletConfigPath: example }, {})).toThrow(/x402\.base: onchain settlement needs base\.rpcUrl and a settler key/);
      const config = loadServerConfig({ walletConfigPath: example }, { HEARTH_X402_EVM_SETTLER_KEY: settlerKey });
      expect(config.wallet.x402).toMatchObject({ settlement: "onchain", minimumTopUpUsd: 5, base: { network: "eip155:8453", settlerPrivateKey: settlerKey, confirmations: 2 } });
      expect(Object.keys(config.wallet.rpc.networks)).toEqual(["base-mainnet", "ethereum-mainnet", "solana-mainnet"]);
      // The flag overrides the file's mode; off needs no settler.
      expect(loadServerConfig({ walletConfigPath: example, x402Settlement: "off" }, {}).wallet.x402.settlement).toBe("off");
      expect(() => loadServerConfig({ walletConfigPath: example, x402Settlement: "sometimes" }, {})).toThrow(/onchain, deferred or off/);
    });

    it("names the bad field of a broken wallet config", () => {
      const path = join(testTempDir("hearth-wallet-"), "wallet.json");
      writeFileSync(path, JSON.stringify({ x402: { settlement: "off", base: { payTo: "not-an-address" } } }));
      expect(() => loadServerConfig({ walletConfigPath: path }, {})).toThrow(/x402\.base\.payTo: an EVM address/);
      writeFileSync(path, JSON.stringify({ rpc: { networks: { "Base Mainnet": { url: "http://x" } } } }));
      expect(() => loadServerConfig({ walletConfigPath: path }, {})).toThrow(/rpc\.networks/);
      writeFileSync(path, JSON.stringify({ x402: { settlement: "deferred" } }));
      expect(() => loadServerConfig({ walletConfigPath: path }, {})).toThrow(/needs at least one payment rail/);
    });
  });
});
