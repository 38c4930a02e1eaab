import { describe, expect, it } from "vitest";
import { ByteSize, loadServerConfig } from "../../src/config/serverSettings.js";
import { formatBytes } from "../../src/models/formatBytes.js";

describe("memory budget settings", () => {
  it("reads sizes with units; a bare number is MiB; empty is no limit", () => {
    expect(ByteSize.parse("8GiB")).toBe(8 * 2 ** 30);
    expect(ByteSize.parse("512 MiB")).toBe(512 * 2 ** 20);
    expect(ByteSize.parse("1.5gb")).toBe(1.5e9);
    expect(ByteSize.parse("4096")).toBe(4096 * 2 ** 20);
    expect(ByteSize.parse(1234)).toBe(1234);
    expect(ByteSize.parse("")).toBeNull();
    expect(ByteSize.parse(undefined)).toBeNull();
    expect(ByteSize.safeParse("lots").success).toBe(false);
  });

  it("takes --keep-alive and the budgets from flags and the environment", () => {
    const config = loadServerConfig({ ramBudget: "2GiB" }, { HEARTH_KEEP_ALIVE: "-1", HEARTH_VRAM_BUDGET: "1024" });
    expect(config).toMatchObject({ keepAlive: -1, ramBudget: 2 * 2 ** 30, vramBudget: 2 ** 30 });
    expect(loadServerConfig({}, {})).toMatchObject({ keepAlive: 300, ramBudget: null, vramBudget: null });
    expect(() => loadServerConfig({ keepAlive: "-2" }, {})).toThrow(/keepAlive/);
    expect(() => loadServerConfig({ ramBudget: "a lot" }, {})).toThrow(/ramBudget: expected a size/);
  });

  it("formats sizes for messages", () => {
    expect(formatBytes(1024)).toBe("1.0 KiB");
    expect(formatBytes(3 * 2 ** 30)).toBe("3.0 GiB");
    expect(formatBytes(Infinity)).toBe("unlimited");
  });
});
