import { randomBytes } from "node:crypto";
import { getAddress, isAddress } from "viem";
import { expect, it } from "vitest";
import { loadOnFirstUse } from "../../src/loadOnFirstUse.js";
import { checksumAddress, isEvmAddress } from "../../src/x402/networks.js";

// networks.ts spells EVM addresses itself so that viem loads only with the first wallet
// operation; these hold it to viem's answers, which it replaced.

it("checksumAddress gives EIP-55's published examples and viem's getAddress for random addresses", () => {
  for (const example of ["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359", "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB"]) {
    expect(checksumAddress(example.toLowerCase())).toBe(example);
  }
  for (let i = 0; i < 200; i++) {
    const lower = `0x${randomBytes(20).toString("hex")}`;
    expect(checksumAddress(lower)).toBe(getAddress(lower));
    expect(checksumAddress(lower.toUpperCase().replace("0X", "0x"))).toBe(getAddress(lower));
  }
  expect(() => checksumAddress("0x1234")).toThrow(/not an EVM address/);
});

it("isEvmAddress agrees with viem's isAddress, strict and not, on good, mis-cased and malformed addresses", () => {
  const good = getAddress(`0x${randomBytes(20).toString("hex")}`);
  const flipped =
    good.slice(0, 2) + [...good.slice(2)].map((c, i) => (i === good.slice(2).search(/[a-fA-F]/) ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c)).join("");
  const cases = [good, good.toLowerCase(), `0x${good.slice(2).toUpperCase()}`, flipped, "0x1234", `${good}00`, good.slice(2), `0x${"g".repeat(40)}`, ""];
  for (const address of cases) {
    expect(isEvmAddress(address), address).toBe(isAddress(address, { strict: false }));
    expect(isEvmAddress(address, { strict: true }), address).toBe(isAddress(address, { strict: true }));
  }
  expect(isEvmAddress(flipped, { strict: true })).toBe(false);
});

it("loadOnFirstUse loads once for concurrent callers and tries again after a failure", async () => {
  let calls = 0;
  let fail = true;
  const load = loadOnFirstUse(async () => {
    calls++;
    if (fail) throw new Error("not yet");
    return { value: calls };
  });
  await expect(load()).rejects.toThrow("not yet");
  fail = false;
  const [a, b] = await Promise.all([load(), load()]);
  expect(a).toBe(b);
  expect(calls).toBe(2);
  expect(await load()).toBe(a);
});
