import { describe, expect, it } from "vitest";
import { chooseLibuvPool, linuxGpuDevices } from "../../bin/libuvPool.cjs";

const linuxServe = { argv: ["serve", "--port", "0"], env: {}, platform: "linux" };

describe("the libuv pool a server starts with (bin/libuvPool.cjs)", () => {
  it("is one thread for `serve` on a Linux machine without a GPU device", () => {
    expect(chooseLibuvPool({ ...linuxServe, gpuDevices: () => [] })).toEqual({ size: 1, reason: expect.stringContaining("no GPU device") });
  });

  it("is libuv's own wherever a GPU device exists, the operator set UV_THREADPOOL_SIZE, on other platforms, and for other commands", () => {
    let listed = 0;
    const none = () => {
      listed++;
      return [];
    };
    expect(chooseLibuvPool({ ...linuxServe, gpuDevices: () => ["/dev/nvidiactl"] })).toBeUndefined();
    expect(chooseLibuvPool({ ...linuxServe, env: { UV_THREADPOOL_SIZE: "4" }, gpuDevices: none })).toBeUndefined();
    // libuv reads an empty value as one thread; it is still the operator's.
    expect(chooseLibuvPool({ ...linuxServe, env: { UV_THREADPOOL_SIZE: "" }, gpuDevices: none })).toBeUndefined();
    expect(chooseLibuvPool({ ...linuxServe, platform: "darwin", gpuDevices: none })).toBeUndefined();
    expect(chooseLibuvPool({ ...linuxServe, platform: "win32", gpuDevices: none })).toBeUndefined();
    for (const argv of [["keys", "create"], ["fixtures"], [], ["--help"]]) expect(chooseLibuvPool({ ...linuxServe, argv, gpuDevices: none })).toBeUndefined();
    // Nothing else needed the device files looked at.
    expect(listed).toBe(0);
  });

  it("finds NVIDIA devices, DRM render nodes and AMD's compute device, and nothing else", () => {
    const tree: Record<string, string[]> = {
      "/dev": ["null", "nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "kfd", "tty0", "dri"],
      "/dev/dri": ["card0", "renderD128", "by-path"],
    };
    expect(linuxGpuDevices((path) => tree[path] ?? [])).toEqual(["/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dri/renderD128"]);
    // A container without devices, and a machine with a display-only card node.
    expect(linuxGpuDevices(() => [])).toEqual([]);
    expect(linuxGpuDevices((path) => (path === "/dev/dri" ? ["card0"] : ["null", "tty"]))).toEqual([]);
  });
});
