import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import solc from "solc";
import { createPublicClient, createWalletClient, defineChain, http, type Abi, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";

/**
 * A real local EVM node (anvil from @foundry-rs/anvil) on a free loopback port, and the test
 * USDC (test/fixtures/contracts/TestUsdc.sol: ERC-20 + EIP-712 + EIP-3009) compiled with
 * solc-js and deployed with viem.
 */

/** anvil's first two well-known dev accounts (funded with 10,000 ETH each). */
export const ANVIL_KEYS = {
  settler: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  deployer: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
} as const;

const ANVIL_BIN = join(PACKAGE_ROOT, "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");

export interface Anvil {
  url: string;
  port: number;
  chainId: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startAnvil(options: { chainId?: number } = {}): Promise<Anvil> {
  const chainId = options.chainId ?? 8453;
  const port = await freePort();
  const child: ChildProcess = spawn(ANVIL_BIN, ["--chain-id", String(chainId), "--host", "127.0.0.1", "--port", String(port), "--silent"], { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with ${child.exitCode}`);
    try {
      await rpc("eth_chainId");
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error("anvil did not start");
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    port,
    chainId,
    rpc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

let compiled: { abi: Abi; bytecode: Hex } | undefined;

/** Compiles TestUsdc.sol offline with solc-js (once per test process). */
export function compileTestUsdc(): { abi: Abi; bytecode: Hex } {
  if (compiled) return compiled;
  const source = readFileSync(join(PACKAGE_ROOT, "test/fixtures/contracts/TestUsdc.sol"), "utf8");
  const input = {
    language: "Solidity",
    sources: { "TestUsdc.sol": { content: source } },
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: "cancun", outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const contract = output.contracts["TestUsdc.sol"]!.TestUsdc!;
  compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  return compiled;
}

export interface TestToken {
  address: Hex;
  mint(to: Hex, value: bigint): Promise<void>;
  /** Sends (from the deployer) any token call and waits for it to be mined. */
  write(functionName: string, args: readonly unknown[]): Promise<void>;
  balanceOf(who: Hex): Promise<bigint>;
}

/** Deploys TestUsdc with the given EIP-712 domain name and version; `mint` mines its transaction. */
export async function deployTestUsdc(anvil: Anvil, name = "USD Coin", version = "2"): Promise<TestToken> {
  const { abi, bytecode } = compileTestUsdc();
  const chain = defineChain({ id: anvil.chainId, name: "anvil", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [anvil.url] } } });
  const account = privateKeyToAccount(ANVIL_KEYS.deployer);
  const transport = http(anvil.url);
  const wallet = createWalletClient({ account, chain, transport });
  const client = createPublicClient({ chain, transport, pollingInterval: 50 });
  const mined = async (hash: Hex) => {
    // Works whether or not the node mines on its own.
    for (let i = 0; i < 400; i++) {
      const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt;
      await anvil.rpc("evm_mine").catch(() => undefined);
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`transaction ${hash} was not mined`);
  };
  const deployHash = await wallet.deployContract({ abi, bytecode, args: [name, version] });
  const address = (await mined(deployHash)).contractAddress!;
  return {
    address,
    mint: async (to, value) => {
      await mined(await wallet.writeContract({ address, abi, functionName: "mint", args: [to, value] }));
    },
    write: async (functionName, args) => {
      await mined(await wallet.writeContract({ address, abi, functionName, args }));
    },
    balanceOf: async (who) => (await client.readContract({ address, abi, functionName: "balanceOf", args: [who] })) as bigint,
  };
}
