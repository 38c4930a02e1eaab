import { describe, expect, it } from "vitest";
import { chooseMallocSettings, MALLOC_SETTINGS, OPERATOR_VARIABLES } from "../../bin/glibcMalloc.cjs";
import { ALLOCATOR_VARIABLES, describeMallocSettings } from "../../src/cli/mallocSettings.js";

const glibcServe = { argv: ["serve", "--port", "0"], env: {}, platform: "linux", glibcVersion: () => "2.36", canReplaceProcess: true, debugged: false };

describe("the allocator setting a server starts again with (bin/glibcMalloc.cjs)", () => {
  it("are a fixed 128 KiB mmap threshold for `serve` on Linux with glibc, where the process can replace itself", () => {
    expect(chooseMallocSettings(glibcServe)).toEqual({ MALLOC_MMAP_THRESHOLD_: "131072" });
    expect(MALLOC_SETTINGS).toEqual({ MALLOC_MMAP_THRESHOLD_: "131072" });
  });

  it("are none where the operator set any allocator variable (even empty), for other commands, off Linux or glibc, without execve, or under a debugger", () => {
    for (const name of OPERATOR_VARIABLES) {
      expect(chooseMallocSettings({ ...glibcServe, env: { [name]: "4" } }), name).toBeUndefined();
      expect(chooseMallocSettings({ ...glibcServe, env: { [name]: "" } }), name).toBeUndefined();
    }
    for (const argv of [["keys", "create"], ["fixtures"], [], ["--help"]]) expect(chooseMallocSettings({ ...glibcServe, argv })).toBeUndefined();
    for (const platform of ["darwin", "win32", "freebsd"]) expect(chooseMallocSettings({ ...glibcServe, platform })).toBeUndefined();
    expect(chooseMallocSettings({ ...glibcServe, glibcVersion: () => undefined })).toBeUndefined();
    expect(chooseMallocSettings({ ...glibcServe, canReplaceProcess: false })).toBeUndefined();
    expect(chooseMallocSettings({ ...glibcServe, debugged: true })).toBeUndefined();
  });

  it("reads the C library only when everything else allows a new start", () => {
    let asked = 0;
    const glibcVersion = () => {
      asked++;
      return "2.36";
    };
    chooseMallocSettings({ ...glibcServe, argv: ["keys"], glibcVersion });
    chooseMallocSettings({ ...glibcServe, platform: "darwin", glibcVersion });
    chooseMallocSettings({ ...glibcServe, env: { MALLOC_ARENA_MAX: "1" }, glibcVersion });
    expect(asked).toBe(0);
    chooseMallocSettings({ ...glibcServe, glibcVersion });
    expect(asked).toBe(1);
  });

  it("are described for the start-up log with who chose them", () => {
    // The log reads the same variables the start-up decision does.
    expect([...ALLOCATOR_VARIABLES]).toEqual([...OPERATOR_VARIABLES]);
    expect(describeMallocSettings({})).toEqual({ settings: "defaults", chosenBy: "the C library" });
    expect(describeMallocSettings({ MALLOC_ARENA_MAX: "4" })).toEqual({ settings: "MALLOC_ARENA_MAX=4", chosenBy: "the environment" });
    expect(describeMallocSettings({ ...MALLOC_SETTINGS, HEARTH_MALLOC_SETTINGS: "hearth" })).toEqual({
      settings: "MALLOC_MMAP_THRESHOLD_=131072",
      chosenBy: expect.stringMatching(/^hearth: /),
    });
    // The marker alone, with the variables gone (an operator's env -u), says nothing was set.
    expect(describeMallocSettings({ HEARTH_MALLOC_SETTINGS: "hearth" })).toEqual({ settings: "defaults", chosenBy: "the C library" });
  });
});
