import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/globalSetup.ts"],
    // Two child processes run the files in turn, and each keeps its modules loaded from one file to
    // the next (isolate: false): importing the server's ~400 modules anew for every file was about
    // 4 s a file, 40% of the suite's time. What a file starts it closes (servers, models, SQLite
    // handles); the modules' own process-wide state is by design the same for every server (the
    // shared llama.cpp binding, the OpenAPI document, transformers.js' offline settings), as it is in
    // `hearth serve`. Files that need a fresh process of their own start one (test/helpers/cli.ts).
    pool: "forks",
    isolate: false,
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // Tests that run ONNX engines without a server send onnxruntime's telemetry nowhere either (what
    // `hearth serve` does itself is tested with the variable removed: onnx-telemetry.test.ts).
    env: { ORT_DISABLE_TELEMETRY: "1" },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
