import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { ConfigError, describeIssues } from "./ConfigError.js";
import { PACKAGE_ROOT } from "./packageRoot.js";
import { loadWalletConfig, WalletConfig } from "./walletConfig.js";

/**
 * The server settings: flags and environment variables. This module (with the wallet
 * config's secrets, read through the env it is given) is the only reader of process.env.
 */

/**
 * Every setting with its flag, environment variable, default and description: --help shows
 * them, and `npm run docs:generate` writes the table in docs/configuration.md and the
 * commands' help in docs/cli.md from them
 * (`see`: the docs page that says more).
 */
/** One server setting: its flag, environment variable, default ("" for none), description and docs page. */
export interface ServerSetting {
  flag: string;
  env: string;
  default: string;
  description: string;
  see?: string;
}

export const SERVER_SETTINGS = {
  host: { flag: "--host <host>", env: "HEARTH_HOST", default: "127.0.0.1", description: "interface to listen on (0.0.0.0 for the LAN)" },
  port: { flag: "--port <port>", env: "HEARTH_PORT", default: "8080", description: "TCP port (0 picks a free one)" },
  dataDir: { flag: "--data-dir <dir>", env: "HEARTH_DATA_DIR", default: "./data", description: "where the SQLite database and generated demo models live" },
  configPath: { flag: "--config <file>", env: "HEARTH_CONFIG", default: "./models.config.json", description: "the model registry (falls back to the bundled demo registry)" },
  logLevel: {
    flag: "--log-level <level>",
    env: "HEARTH_LOG_LEVEL",
    default: "info",
    description: "least severe log lines written to stderr: fatal, error, warn, info, debug, trace or silent",
  },
  logFormat: {
    flag: "--log-format <format>",
    env: "HEARTH_LOG_FORMAT",
    default: "auto",
    description: "log lines on stderr: pretty (human-readable, through pino-pretty), json (one object per line) or auto (pretty when stderr is a terminal, else json)",
    see: "operations.md#metrics-and-logs",
  },
  diemResetHourUtc: {
    flag: "--diem-reset-hour <hour>",
    env: "HEARTH_DIEM_RESET_HOUR",
    default: "0",
    description: "UTC hour at which DIEM allocations refill and daily key limits reset",
  },
  maxUploadMb: {
    flag: "--max-upload-mb <mb>",
    env: "HEARTH_MAX_UPLOAD_MB",
    default: "25",
    description: "largest audio file accepted by /audio/transcriptions, /audio/translations and /audio/voices, and largest file or audio part in a chat message (413 above)",
  },
  maxBodyInFlight: {
    flag: "--max-body-in-flight <size>",
    env: "HEARTH_MAX_BODY_IN_FLIGHT",
    default: "",
    description:
      "request bodies held in memory at once, all callers together (e.g. 512MB; a bare number is MiB); one key or address may hold a quarter; past it a 503 (a caller past its quarter: 429), both with Retry-After; empty: an eighth of the JavaScript heap; never less than one --max-upload-mb upload",
    see: "operations.md#request-bodies-in-flight",
  },
  metricsPort: {
    flag: "--metrics-port <port>",
    env: "HEARTH_METRICS_PORT",
    default: "",
    description: "also serve GET /metrics without authentication on this port (same host; 0 picks a free one); empty: only the operator-key route on the API port",
    see: "operations.md#metrics-and-logs",
  },
  stallWarnMs: {
    flag: "--stall-warn-ms <ms>",
    env: "HEARTH_STALL_WARN_MS",
    default: "200",
    description:
      "when one piece of work holds the event loop this long (every request and stream waits meanwhile), log a warning naming the requests and model loads in flight, and count it in hearth_event_loop_stall_seconds; 0: off",
    see: "operations.md#metrics-and-logs",
  },
  idleGcMs: {
    flag: "--idle-gc-ms <ms>",
    env: "HEARTH_IDLE_GC_MS",
    default: "2000",
    description:
      "after this long with no request in flight, give the JavaScript heap that requests grew back to the system (on a chat node 30–45 MB of resident memory on Node 20 and 22, about 120 MB on Node 24): a young garbage collection, then a full one 5.5 s later unless a request comes first; again only after more requests; 0: off",
    see: "operations.md#the-processs-own-memory",
  },
  videoWorkers: {
    flag: "--video-workers <n>",
    env: "HEARTH_VIDEO_WORKERS",
    default: "1",
    description: "video and audio jobs generated at the same time (the rest wait in the durable queue)",
  },
  preload: {
    flag: "--preload <ids>",
    env: "HEARTH_PRELOAD",
    default: "",
    description:
      'comma-separated model ids to load at start-up ("all": every model), with a progress bar in a terminal and a line per model; a model that fails is reported with its cause and the server starts anyway; preloaded models then follow the keep-alive',
  },
  keepAlive: {
    flag: "--keep-alive <seconds>",
    env: "HEARTH_KEEP_ALIVE",
    default: "300",
    description: "seconds a model stays loaded after its last request (a model's keepAlive overrides it); 0 unloads as soon as it is idle, -1 never unloads for idleness",
    see: "operations.md#the-model-manager",
  },
  ramBudget: {
    flag: "--ram-budget <size>",
    env: "HEARTH_RAM_BUDGET",
    default: "",
    description: "RAM the loaded models may use together (e.g. 8GiB, 512MiB; a bare number is MiB); least recently used idle models are unloaded to make room; empty: no limit",
  },
  vramBudget: {
    flag: "--vram-budget <size>",
    env: "HEARTH_VRAM_BUDGET",
    default: "",
    description: "GPU memory the loaded models may use together, like --ram-budget; empty: no limit",
  },
  publicUrl: {
    flag: "--public-url <url>",
    env: "HEARTH_PUBLIC_URL",
    default: "",
    description: "the origin clients reach this node at (sign-in-with-x domain and uri, x402 resource URLs); empty: the addresses it listens on; set it behind a reverse proxy",
  },
  walletConfigPath: {
    flag: "--wallet-config <file>",
    env: "HEARTH_WALLET_CONFIG",
    default: "",
    description: "JSON file with the x402 top-up rails (pay-to, USDC asset, EIP-712 domain, chain RPC) and the crypto RPC networks; empty: no top-ups, no RPC proxy",
    see: "wallets.md#the-wallet-config-file",
  },
  x402Settlement: {
    flag: "--x402-settlement <mode>",
    env: "HEARTH_X402_SETTLEMENT",
    default: "",
    description:
      "top-up settlement: onchain (credit once the transfer is mined), deferred (credit on the signature, submit before expiry) or off (development only); overrides the wallet config's x402.settlement",
  },
  responsesRetentionDays: {
    flag: "--responses-retention-days <days>",
    env: "HEARTH_RESPONSES_RETENTION_DAYS",
    default: "30",
    description: "days a stored response (POST /responses with store, the default) stays readable and continuable with previous_response_id before it is deleted",
    see: "api.md#responses-post-responses",
  },
  searchUrl: {
    flag: "--search-url <url>",
    env: "HEARTH_SEARCH_URL",
    default: "",
    description: "base URL of a SearxNG instance (its JSON API, format=json enabled) used for chat web search and POST /augment/search; empty: web search off",
    see: "api.md#web-search-scraping-and-citations",
  },
  searchPriceUsd: {
    flag: "--search-price <usd>",
    env: "HEARTH_SEARCH_PRICE",
    default: "0.01",
    description: "charge per web search, run for a chat request or by POST /augment/search (USD, or the same amount of DIEM)",
  },
  webScraping: {
    flag: "--web-scraping <on|off>",
    env: "HEARTH_WEB_SCRAPING",
    default: "off",
    description: "let callers make the node fetch URLs (chat's enable_web_scraping, POST /augment/scrape); the node fetches any address it can reach, LAN included",
  },
  scrapePriceUsd: {
    flag: "--scrape-price <usd>",
    env: "HEARTH_SCRAPE_PRICE",
    default: "0.01",
    description: "charge per web page scraped successfully, for a chat request or POST /augment/scrape (USD, or the same amount of DIEM)",
  },
  textParserPriceUsd: {
    flag: "--text-parser-price <usd>",
    env: "HEARTH_TEXT_PARSER_PRICE",
    default: "0.001",
    description: "charge per document POST /augment/text-parser turns into text (USD, or the same amount of DIEM)",
  },
  errorFormat: {
    flag: "--error-format <format>",
    env: "HEARTH_ERROR_FORMAT",
    default: "provider",
    description:
      'error bodies: provider ({"error": "<message>"}, the reference API\'s shape) or standard ({"error": {"message", "type", "code", "param"}}, what the chat-completions SDKs read)',
    see: "api.md#api-behaviour",
  },
} as const satisfies Record<string, ServerSetting>;

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** A memory size: bytes as a number, or a string such as "8GiB", "512MB", "1.5 GiB" (a bare number is MiB); "" or "none": no limit (null). */
export const ByteSize = z
  .union([z.number().nonnegative(), z.string()])
  .optional()
  .transform((value, ctx): number | null => {
    if (value === undefined || value === null) return null;
    if (typeof value === "number") return Math.floor(value);
    const text = value.trim().toLowerCase();
    if (text === "" || text === "none" || text === "unlimited") return null;
    const match = /^(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?$/.exec(text);
    if (!match) {
      ctx.addIssue({ code: "custom", message: `expected a size such as 8GiB, 512MiB or 4096 (MiB), got "${value}"` });
      return z.NEVER;
    }
    return Math.floor(Number(match[1]) * SIZE_UNITS[match[2] ?? "mib"]!);
  });

export const ServerConfig = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  dataDir: z.string().min(1),
  configPath: z.string().min(1),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
  logFormat: z.enum(["auto", "json", "pretty"]).default("auto"),
  diemResetHourUtc: z.coerce.number().int().min(0).max(23).default(0),
  /** Largest uploaded audio file (transcription input, voice samples), in MB; larger uploads answer 413. */
  maxUploadMb: z.coerce.number().positive().max(1024).default(25),
  /** Request bodies held at once, in bytes (src/http/bodyBudget.ts); null: an eighth of the JavaScript heap. */
  maxBodyInFlight: ByteSize,
  /** Longest text extracted from one file (a chat message's file part, or /augment/text-parser's upload), in characters (400 above). */
  maxFileChars: z.number().int().positive().default(1_000_000),
  /** Non-streaming chat requests that run longer than this answer 504. */
  requestTimeoutMs: z.number().int().positive().default(120_000),
  /** Time given to in-flight requests on SIGTERM before they are cut. */
  shutdownGraceMs: z.number().int().nonnegative().default(10_000),
  /** Public origin (scheme, host, optional port and path prefix); unset: the listen addresses. */
  publicUrl: z
    .url({ protocol: /^https?$/ })
    .refine((url) => !new URL(url).search && !new URL(url).hash, "no query or fragment")
    .optional(),
  wallet: WalletConfig.default(WalletConfig.parse({})),
  /** A second listener serving only GET /metrics, without auth (for a Prometheus scraper on a private network). */
  metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
  /** A stall of the event loop this long is logged with what was in flight (src/metrics/StallWatch.ts); 0: not watched. */
  stallWarnMs: z.coerce.number().int().nonnegative().default(200),
  /** The idle collection starts once no request has been in flight this long (src/garbageCollection.ts); 0: never. */
  idleGcMs: z.coerce.number().int().nonnegative().default(2000),
  /** Video jobs run at the same time; queued jobs wait in SQLite. */
  videoWorkers: z.coerce.number().int().min(1).max(64).default(1),
  /** Finished videos not fetched and completed are deleted after this long. */
  videoRetentionMs: z
    .number()
    .int()
    .positive()
    .default(24 * 3600_000),
  /** A job interrupted by this many restarts fails (and is refunded) instead of starting again. */
  jobMaxAttempts: z.number().int().min(1).default(3),
  /** Days a stored response is kept (GET /responses/{id}, previous_response_id). */
  responsesRetentionDays: z.coerce.number().positive().default(30),
  /** SearxNG base URL for chat web search; unset: no search provider. */
  searchUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Per web search and per successfully scraped page, in whole USD (DIEM at the same amount). */
  searchPriceUsd: z.coerce.number().nonnegative().default(0.01),
  scrapePriceUsd: z.coerce.number().nonnegative().default(0.01),
  textParserPriceUsd: z.coerce.number().nonnegative().default(0.001),
  /** The shape of error bodies: the reference API's `{error: "<message>"}`, or the chat-completions standard's nested object. */
  errorFormat: z.enum(["provider", "standard"]).default("provider"),
  /** Whether enable_web_scraping is allowed (off: it is a 400 naming the field). */
  webScraping: z.enum(["on", "off"]).default("off"),
  /** How long a search or a page fetch may take. */
  searchTimeoutMs: z.number().int().positive().default(10_000),
  /** Seconds an idle model stays loaded (ModelEntry.keepAlive overrides); 0: unload when idle; -1: never for idleness. */
  keepAlive: z.coerce.number().int().min(-1).default(300),
  /** Model ids loaded at start-up by `hearth serve` ("all": every model); they then follow the keep-alive like any other. */
  preload: z
    .string()
    .default("")
    .transform((ids) =>
      ids
        .split(",")
        .map((id) => id.trim())
        .filter(Boolean),
    ),
  /** Memory the loaded models may use together, in bytes; null: no limit. */
  ramBudget: ByteSize,
  vramBudget: ByteSize,
  /** A model whose load failed answers 503 with the cause for this long before the next request retries the load. */
  modelRetryMs: z.number().int().nonnegative().default(5_000),
  /** How long a load waits for busy models to finish when the memory budget is full, before answering 503. */
  modelLoadWaitMs: z.number().int().nonnegative().default(30_000),
});
export type ServerConfig = z.infer<typeof ServerConfig>;

export type ServerSettingName = keyof typeof SERVER_SETTINGS;

/** Flags win over environment variables, which win over defaults. */
export function loadServerConfig(flags: Partial<Record<ServerSettingName, string | undefined>> = {}, env = process.env): ServerConfig {
  const raw: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(SERVER_SETTINGS) as [ServerSettingName, (typeof SERVER_SETTINGS)[ServerSettingName]][]) {
    raw[name] = flags[name] ?? env[setting.env] ?? setting.default;
  }
  if (!flags.configPath && !env.HEARTH_CONFIG && !existsSync(resolve(String(raw.configPath)))) {
    raw.configPath = resolve(PACKAGE_ROOT, "models.config.json");
  }
  raw.publicUrl = raw.publicUrl || undefined;
  raw.searchUrl = raw.searchUrl || undefined;
  raw.metricsPort = raw.metricsPort || undefined;
  raw.wallet = loadWalletConfig(String(raw.walletConfigPath ?? ""), String(raw.x402Settlement ?? ""), env);
  delete raw.walletConfigPath;
  delete raw.x402Settlement;
  const parsed = ServerConfig.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues("settings", parsed.error));
  return { ...parsed.data, dataDir: resolve(parsed.data.dataDir), configPath: resolve(parsed.data.configPath) };
}

/**
 * One setting as a command other than `serve` reads it: the flag, else the environment
 * variable, else the default (no fallback to the bundled registry: `models add` writes there).
 */
export function readSetting(name: ServerSettingName, flags: Partial<Record<ServerSettingName, string | undefined>> = {}, env = process.env): string {
  const setting = SERVER_SETTINGS[name];
  return flags[name] ?? env[setting.env] ?? setting.default;
}

/** The operator's API key for the CLI commands that call a running server (`models list --url`). */
export const ADMIN_KEY_ENV = "HEARTH_ADMIN_KEY";

export function adminKeyFromEnv(env = process.env): string | undefined {
  return env[ADMIN_KEY_ENV];
}
