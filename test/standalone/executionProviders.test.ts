import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import {
  missingProviderLibraries,
  onnxRuntimeBinaryDir,
  providerAvailability,
  providerLibraryFileName,
  type ProviderAvailability,
} from "../../src/engines/onnx/providerAvailability.js";
import { resolveExecutionProviders } from "../../src/engines/onnx/resolveExecutionProviders.js";

/**
 * Where ONNX models run. The decisions are checked against stated machines (a provider that
 * works, one never installed, one installed that fails); detection runs for real on this
 * machine, whichever it is: with no CUDA provider library (the offline install) "auto" is the
 * CPU and says how to get CUDA; with one, it is CUDA or the reason the test session failed.
 */

/** A machine where each named provider answers as given (and the CPU always works). */
const machine = (providers: Record<string, ProviderAvailability>) => {
  const asked: string[] = [];
  const availability = async (provider: string): Promise<ProviderAvailability> => {
    asked.push(provider);
    return provider === "cpu" ? { available: true } : (providers[provider] ?? { available: false, installed: false, reason: `no ${provider} here` });
  };
  return { availability, asked };
};
const notInstalled: ProviderAvailability = { available: false, installed: false, reason: "the CUDA provider library is not installed" };
const broken: ProviderAvailability = { available: false, installed: true, reason: "the CUDA provider is installed but a session on it failed: no CUDA-capable device is detected" };

describe("resolveExecutionProviders: the decision", () => {
  it('"auto" is CUDA first, then the CPU, where the CUDA provider works', async () => {
    const { availability } = machine({ cuda: { available: true } });
    expect(await resolveExecutionProviders("auto", { gpu: "auto", availability })).toEqual({
      name: "cuda",
      providers: ["cuda", "cpu"],
      reason: "auto: the CUDA provider is installed and a test session ran on it",
      fellBack: false,
    });
  });

  it('"auto" is the CPU, quietly, where the CUDA provider is not installed', async () => {
    const { availability } = machine({ cuda: notInstalled });
    expect(await resolveExecutionProviders("auto", { gpu: "auto", availability })).toEqual({
      name: "cpu",
      providers: ["cpu"],
      reason: "auto: the CUDA provider library is not installed",
      fellBack: false,
    });
  });

  it('"auto" is the CPU with a warning where the CUDA provider is installed but fails', async () => {
    const { availability } = machine({ cuda: broken });
    const placement = await resolveExecutionProviders("auto", { gpu: "auto", availability });
    expect(placement).toMatchObject({ name: "cpu", providers: ["cpu"], fellBack: true });
    expect(placement.reason).toBe(`auto: ${broken.reason}`);
  });

  it('"auto" on a server without a GPU is the CPU without looking for CUDA', async () => {
    const { availability, asked } = machine({ cuda: { available: true } });
    expect(await resolveExecutionProviders("auto", { gpu: false, availability })).toMatchObject({ name: "cpu", providers: ["cpu"], fellBack: false });
    expect(asked).toEqual([]);
  });

  it("an explicit list is honoured in its order, even on a server without a GPU", async () => {
    const { availability } = machine({ cuda: { available: true } });
    expect(await resolveExecutionProviders(["cpu"], { gpu: "auto", availability })).toEqual({ name: "cpu", providers: ["cpu"], reason: 'configured ["cpu"]', fellBack: false });
    expect(await resolveExecutionProviders(["cuda", "cpu"], { gpu: false, availability })).toMatchObject({ name: "cuda", providers: ["cuda", "cpu"], fellBack: false });
    expect(await resolveExecutionProviders(["cpu", "cuda", "cpu"], { gpu: "auto", availability })).toMatchObject({ name: "cpu", providers: ["cpu", "cuda"] });
  });

  it('["cuda", "cpu"] without a working CUDA falls back to the CPU, saying why', async () => {
    const { availability } = machine({ cuda: notInstalled });
    expect(await resolveExecutionProviders(["cuda", "cpu"], { gpu: "auto", availability })).toEqual({
      name: "cpu",
      providers: ["cpu"],
      reason: 'configured ["cuda","cpu"], skipped cuda: the CUDA provider library is not installed',
      fellBack: true,
    });
  });

  it('["cuda"] without a working CUDA fails the load with the reason and the way out', async () => {
    const { availability } = machine({ cuda: broken });
    await expect(resolveExecutionProviders(["cuda"], { gpu: "auto", availability })).rejects.toThrow(
      'none of the execution providers ["cuda"] works here (cuda: the CUDA provider is installed but a session on it failed: no CUDA-capable device is detected); add "cpu" to the list to fall back to the CPU, or set "auto"',
    );
  });
});

describe("the setting", () => {
  const entry = (overrides: Record<string, unknown>) => ModelEntry.parse({ id: "m", type: "tts", backend: "kokoro", file: "/models/kokoro", ...overrides });

  it('defaults to "auto" for every ONNX-backed engine', () => {
    const defaults = entry({});
    expect(defaults.onnx.executionProviders).toBe("auto");
    expect(defaults.image.executionProviders).toBe("auto");
    expect(defaults.embedding.executionProviders).toBe("auto");
  });

  it("takes a list in order of preference, and refuses an empty one or another word", () => {
    expect(entry({ onnx: { executionProviders: ["cuda", "cpu"] } }).onnx.executionProviders).toEqual(["cuda", "cpu"]);
    expect(entry({ image: { executionProviders: ["cpu"] } }).image.executionProviders).toEqual(["cpu"]);
    expect(() => entry({ onnx: { executionProviders: [] } })).toThrow();
    expect(() => entry({ onnx: { executionProviders: "gpu" } })).toThrow();
  });
});

describe("provider libraries", () => {
  const dirs: string[] = [];
  afterAll(() =>
    dirs.forEach((dir) => {
      rmSync(dir, { recursive: true, force: true });
    }),
  );
  const folder = (...files: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), "hearth-ort-bin-"));
    dirs.push(dir);
    for (const file of files) writeFileSync(join(dir, file), "");
    return dir;
  };

  it("are named per platform as onnxruntime loads them", () => {
    expect(providerLibraryFileName("cuda", "linux")).toBe("libonnxruntime_providers_cuda.so");
    expect(providerLibraryFileName("shared", "linux")).toBe("libonnxruntime_providers_shared.so");
    expect(providerLibraryFileName("cuda", "win32")).toBe("onnxruntime_providers_cuda.dll");
  });

  it("CUDA needs its own library and the shared bridge", () => {
    expect(missingProviderLibraries("cuda", folder(), "linux")).toEqual(["libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"]);
    expect(missingProviderLibraries("cuda", folder("libonnxruntime_providers_cuda.so"), "linux")).toEqual(["libonnxruntime_providers_shared.so"]);
    expect(missingProviderLibraries("cuda", folder("libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"), "linux")).toEqual([]);
  });

  it("are looked for next to onnxruntime-node's binding", () => {
    const dir = onnxRuntimeBinaryDir();
    expect(dir).toMatch(new RegExp(`onnxruntime-node/bin/napi-v\\d+/${process.platform}/${process.arch}$`));
  });
});

describe("detection on this machine", () => {
  const binaryDir = onnxRuntimeBinaryDir()!;
  const cudaInstalled = missingProviderLibraries("cuda", binaryDir).length === 0;

  it("the CPU always works; a provider this onnxruntime-node build lacks is named with those it has", async () => {
    expect(await providerAvailability("cpu")).toEqual({ available: true });
    const missing = await providerAvailability("no-such-provider");
    expect(missing).toMatchObject({ available: false, installed: false });
    expect((missing as { reason: string }).reason).toMatch(/offers no "no-such-provider" provider \(it offers cpu\b/);
  });

  describe.runIf(!cudaInstalled)("without the CUDA provider library (the offline install)", () => {
    it('"auto" is the CPU, and the reason says what is missing and how to get it', async () => {
      const placement = await resolveExecutionProviders("auto", { gpu: "auto" });
      expect(placement).toMatchObject({ name: "cpu", providers: ["cpu"], fellBack: false });
      expect(placement.reason).toContain("auto: the CUDA provider library is not installed (");
      expect(placement.reason).toContain(`missing from ${binaryDir}`);
      expect(placement.reason).toContain("npm run onnx:cuda");
    });

    it('["cuda", "cpu"] runs on the CPU with a warning; ["cuda"] fails with a clear error', async () => {
      expect(await resolveExecutionProviders(["cuda", "cpu"], { gpu: "auto" })).toMatchObject({ name: "cpu", providers: ["cpu"], fellBack: true });
      await expect(resolveExecutionProviders(["cuda"], { gpu: "auto" })).rejects.toThrow(
        /^none of the execution providers \["cuda"\] works here \(cuda: the CUDA provider library is not installed/,
      );
    });
  });

  describe.runIf(cudaInstalled)("with the CUDA provider library installed", () => {
    it('"auto" is CUDA when a test session runs on it, else the CPU with the session\'s error', async () => {
      const placement = await resolveExecutionProviders("auto", { gpu: "auto" });
      if (placement.name === "cuda") expect(placement).toMatchObject({ providers: ["cuda", "cpu"], fellBack: false });
      else expect(placement).toMatchObject({ name: "cpu", fellBack: true, reason: expect.stringContaining("installed but a session on it failed") });
    });
  });
});
