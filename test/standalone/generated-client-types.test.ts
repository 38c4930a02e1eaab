import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { PROVIDER_OPENAPI_PATH } from "../helpers/providerSchema.js";

/**
 * test/generated/provider-openapi.d.ts is committed (so the typecheck and an editor see it without
 * a generation step) and must be what `npm run client:generate` makes from the provider's document
 * today: regenerated here with the same CLI and compared byte for byte.
 */

const GENERATED = fileURLToPath(new URL("../generated/provider-openapi.d.ts", import.meta.url));
const CLI = join(createRequire(import.meta.url).resolve("openapi-typescript/package.json"), "..", "bin", "cli.js");

it("the committed generated types are what `npm run client:generate` makes from the provider's document", () => {
  const dir = mkdtempSync(join(tmpdir(), "hearth-client-"));
  try {
    const fresh = join(dir, "provider-openapi.d.ts");
    execFileSync(process.execPath, [CLI, PROVIDER_OPENAPI_PATH, "-o", fresh], { stdio: "pipe" });
    const committed = readFileSync(GENERATED, "utf8");
    expect(committed.length).toBeGreaterThan(100_000);
    expect(committed === readFileSync(fresh, "utf8"), "test/generated/provider-openapi.d.ts is stale: run `npm run client:generate` and commit it").toBe(true);
    // The comparison can fail: one changed character is a stale file.
    expect(committed.replace("createChatCompletion", "createChatCompletions") === readFileSync(fresh, "utf8")).toBe(false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
