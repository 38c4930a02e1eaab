import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/globalSetup.ts"],
    // Each file gets its own process: node-llama-cpp contexts and SQLite handles stay isolated.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // Tests that run ONNX engines without a server send onnxruntime's telemetry nowhere either (what
    // `hearth serve` does itself is tested with the variable removed: onnx-telemetry.test.ts).
    env: { ORT_DISABLE_TELEMETRY: "1" },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
