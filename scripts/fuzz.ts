/**
 * `npm run fuzz [-- --requests N --concurrency C --seed S --out FILE]`: a hostile-input run over
 * every operation of a real node, outside the test suite's time.
 *
 * It starts `hearth serve` as a child process on the demo models (its own data directory, a
 * metrics port), reads the node's own OpenAPI document to list every operation, builds a valid-ish
 * body for each from its request schema, then sends mutated bodies (missing and mistyped fields,
 * 1 MB strings, nesting thousands of levels deep, prototype keys, wrong content types, broken JSON)
 * with a mix of credentials (admin, inference, random and no key). While it runs, a probe times a
 * `GET /models` every 250 ms (what a stranger's request waits), and the node's own event-loop lag
 * is read from its metrics. It reports status classes per operation, every 5xx with the request that
 * caused it, probe latency and event-loop lag percentiles, and whether the node is still up.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { mulberry32 } from "../src/random.js";
import { createKeys, probeListing, startNode } from "./nodeUnderTest.js";

const ROOT = resolve(import.meta.dirname, "..");
const log = (line: string) => process.stdout.write(`${line}\n`);

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "3000" },
    concurrency: { type: "string", default: "8" },
    seed: { type: "string", default: "1" },
    out: { type: "string", default: "bench-out/fuzz.json" },
  },
});
const TOTAL = Number(args.requests);
const CONCURRENCY = Number(args.concurrency);
const random = mulberry32(Number(args.seed));
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

// biome-ignore lint/suspicious/noExplicitAny: walking an arbitrary OpenAPI document
type JsonSchema = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  schema?: JsonSchema;
  contentType?: string;
}

interface Reply {
  status: number;
  text: string;
}

/**
 * One request from a chosen loopback address (127.0.0.2-254): the abuse guard counts failures per
 * client address too, and the run should reach the routes, not only the guard.
 */
async function send(url: string, method: string, headers: Record<string, string>, body: string | FormData | undefined, localAddress: string): Promise<Reply> {
  let payload: Buffer | undefined;
  if (body instanceof FormData) {
    const encoded = new Response(body);
    headers["content-type"] = encoded.headers.get("content-type")!;
    payload = Buffer.from(await encoded.arrayBuffer());
  } else if (body !== undefined) payload = Buffer.from(body);
  return new Promise((resolvePromise, reject) => {
    const req = request(url, { method, headers: { ...headers, ...(payload ? { "content-length": String(payload.length) } : {}) }, localAddress, timeout: 120_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolvePromise({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timed out after 120 s")));
    req.on("error", reject);
    req.end(payload);
  });
}

// ---------------------------------------------------------------------------------------------
// Bodies from the node's own request schemas

function resolveRef(document: JsonSchema, schema: JsonSchema | undefined): JsonSchema | undefined {
  let current = schema;
  for (let hops = 0; current?.$ref && hops < 20; hops++) {
    const path = String(current.$ref).replace(/^#\//, "").split("/");
    // biome-ignore lint/suspicious/noExplicitAny: walking an arbitrary OpenAPI document
    current = path.reduce<any>((node, key) => node?.[key], document);
  }
  return current;
}

/** A minimal instance of a schema: required properties, first enum values, defaults. */
function instanceOf(document: JsonSchema, raw: JsonSchema | undefined, models: string[], depth = 0): unknown {
  const schema = resolveRef(document, raw);
  if (!schema || depth > 6) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined && random() < 0.5) return schema.default;
  if (Array.isArray(schema.enum)) return pick(schema.enum);
  for (const key of ["anyOf", "oneOf"]) if (Array.isArray(schema[key])) return instanceOf(document, pick(schema[key]), models, depth + 1);
  if (Array.isArray(schema.allOf)) return instanceOf(document, schema.allOf[0], models, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const required = new Set<string>(schema.required ?? []);
      for (const [name, property] of Object.entries<JsonSchema>(schema.properties ?? {})) {
        if (!required.has(name) && random() < 0.6) continue;
        out[name] = name === "model" && models.length ? pick(models) : instanceOf(document, property, models, depth + 1);
      }
      return out;
    }
    case "array":
      return [instanceOf(document, schema.items, models, depth + 1)];
    case "string":
      return schema.format === "uri" ? "http://127.0.0.1:9/x" : "hello";
    case "integer":
      return Math.max(Number(schema.minimum ?? 1), Math.min(Number(schema.maximum ?? 4), 2));
    case "number":
      return Math.max(Number(schema.minimum ?? 0.5), Math.min(Number(schema.maximum ?? 1), 0.5));
    case "boolean":
      return random() < 0.5;
    default:
      return "hello";
  }
}

/** JSON text nested `levels` deep, written as text (JSON.stringify itself overflows the stack past a few thousand). */
const deepJson = (levels: number, asArray: boolean) => (asArray ? `${"[".repeat(levels)}1${"]".repeat(levels)}` : `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`);
/** Marks where a deep value goes in a body; replaced by the deep text after stringifying. */
const DEEP_MARK = "\u0000deep\u0000";
const withDeepValues = (text: string) => text.replaceAll(JSON.stringify(DEEP_MARK), () => deepJson(5000, random() < 0.5));

const HOSTILE_VALUES: (() => unknown)[] = [
  () => null,
  () => -1,
  () => -0.5,
  () => 1e308,
  () => "",
  () => "x".repeat(1_000_000),
  () => "💥\u0000\u202e".repeat(2000),
  () => [],
  () => ({}),
  () => true,
  () => DEEP_MARK,
  () => JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}'),
  () => Array.from({ length: 10_000 }, (_, i) => i),
  () => "9".repeat(400),
];

interface Mutated {
  label: string;
  body: string | FormData | undefined;
  contentType?: string;
}

function mutate(seed: unknown, contentType: string): Mutated {
  const roll = random();
  if (contentType.startsWith("multipart/")) {
    const form = new FormData();
    if (seed && typeof seed === "object") for (const [k, v] of Object.entries(seed)) form.append(k, typeof v === "string" ? v : JSON.stringify(v));
    const bytes = roll < 0.5 ? new Uint8Array(Math.floor(random() * 4096)).map(() => Math.floor(random() * 256)) : new Uint8Array(0);
    form.set("file", new Blob([bytes]), pick(["a.wav", "a.mp3", "../../etc/passwd", "x".repeat(300)]));
    return { label: "multipart with random file bytes", body: form };
  }
  if (roll < 0.12) return { label: "the seed body", body: JSON.stringify(seed), contentType };
  if (roll < 0.18) return { label: "broken JSON", body: `${JSON.stringify(seed).slice(0, -1)},,`, contentType };
  if (roll < 0.22) return { label: "wrong content type", body: JSON.stringify(seed), contentType: "text/plain" };
  if (roll < 0.26) return { label: "empty body", body: "", contentType };
  if (roll < 0.3) return { label: "a JSON array body", body: JSON.stringify([seed, seed]), contentType };
  if (roll < 0.34) return { label: "a body nested 10,000 levels", body: deepJson(10_000, random() < 0.5), contentType };
  if (roll < 0.37) return { label: "a 5 MB body", body: JSON.stringify({ ...(seed as object), padding: "p".repeat(5_000_000) }), contentType };
  const body = seed && typeof seed === "object" && !Array.isArray(seed) ? { ...(seed as Record<string, unknown>) } : {};
  const keys = Object.keys(body);
  if (roll < 0.47 && keys.length) {
    const dropped = pick(keys);
    delete body[dropped];
    return { label: `without ${dropped}`, body: JSON.stringify(body), contentType };
  }
  if (roll < 0.52) {
    body[`unknown_${Math.floor(random() * 1000)}`] = pick(HOSTILE_VALUES)();
    return { label: "an unknown field", body: withDeepValues(JSON.stringify(body)), contentType };
  }
  const field = keys.length && random() < 0.8 ? pick(keys) : pick(["model", "messages", "input", "prompt", "id", "amount", "tools", "response_format"]);
  const index = Math.floor(random() * HOSTILE_VALUES.length);
  body[field] = HOSTILE_VALUES[index]!();
  return { label: `${field} = hostile value #${index}`, body: withDeepValues(JSON.stringify(body)), contentType };
}

function fillPath(path: string, ids: Record<string, string[]>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const known = ids[name] ?? [];
    const roll = random();
    if (known.length && roll < 0.6) return encodeURIComponent(pick(known));
    if (roll < 0.8) return encodeURIComponent(pick(["0", "-1", "..", "%00", "x".repeat(2000), "null", "'; DROP TABLE api_keys;--"]));
    return `id-${Math.floor(random() * 1e9)}`;
  });
}

// ---------------------------------------------------------------------------------------------

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-fuzz-"));
  log(`starting a node on the demo models in ${dataDir} (first start generates them)`);
  const node = await startNode(dataDir);
  const keys = { admin: createKeys(dataDir, 24, true), inference: createKeys(dataDir, 24, false) };
  try {
    const document = (await (await fetch(`${node.baseUrl}/openapi.json`)).json()) as JsonSchema;
    const basePath = new URL(node.baseUrl).pathname;
    const operations: Operation[] = [];
    for (const [path, item] of Object.entries<JsonSchema>(document.paths)) {
      for (const method of ["get", "post", "put", "patch", "delete"]) {
        const operation = item[method];
        if (!operation) continue;
        const content = operation.requestBody?.content ?? {};
        const contentType = Object.keys(content)[0];
        operations.push({ method: method.toUpperCase(), path: path.replace(/^\/api\/v1/, ""), schema: contentType ? content[contentType].schema : undefined, contentType });
      }
    }
    const models = ((await (await fetch(`${node.baseUrl}/models?type=all`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    const ids: Record<string, string[]> = { id: models, modelId: models, model_id: models, slug: ["alan-watts", "no-such"], network: ["ethereum-mainnet", "base-mainnet"] };
    log(`${operations.length} operations, ${models.length} models; ${TOTAL} requests, ${CONCURRENCY} at a time`);

    // The probe: what an innocent request waits while the fuzz runs.
    const probe = probeListing(node.baseUrl, 250);
    // The node's own event-loop lag (prom-client resets its histogram at each scrape).
    const lag = { p50: [] as number[], p99: [] as number[], max: [] as number[] };
    const lagTimer = setInterval(() => {
      fetch(node.metricsUrl)
        .then((r) => r.text())
        .then((text) => {
          for (const [name, into] of [
            ["p50", lag.p50],
            ["p99", lag.p99],
            ["max", lag.max],
          ] as const) {
            const match = new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)`, "m").exec(text);
            if (match) into.push(Number(match[1]) * 1000);
          }
        })
        .catch(() => undefined);
    }, 1000);

    const byOperation = new Map<string, Record<string, number>>();
    const serverErrors: { request: string; status: number; body: string }[] = [];
    const slowest: { ms: number; request: string; status: number }[] = [];
    let transportErrors = 0;
    let next = 0;
    /** What each request sent, by its X-Request-Id, to name the requests a stall report lists. */
    const sentLabels = new Map<string, string>();
    const started = performance.now();
    const worker = async () => {
      while (next < TOTAL) {
        const number = ++next;
        const operation = pick(operations);
        const path = fillPath(operation.path, ids);
        const headers: Record<string, string> = {};
        const auth = random();
        if (auth < 0.5) headers.authorization = `Bearer ${pick(keys.admin)}`;
        else if (auth < 0.75) headers.authorization = `Bearer ${pick(keys.inference)}`;
        else if (auth < 0.85) headers.authorization = `Bearer hth_${Math.floor(random() * 1e12).toString(36)}`;
        let mutated: Mutated = { label: "no body", body: undefined };
        if (operation.method !== "GET" && operation.method !== "DELETE") {
          const seed = operation.schema ? instanceOf(document, operation.schema, models) : {};
          mutated = mutate(seed, operation.contentType ?? "application/json");
          if (mutated.contentType) headers["content-type"] = mutated.contentType;
        }
        // The node names a request that was in flight during a stall by this id.
        headers["x-request-id"] = `fuzz-${number}`;
        const key = `${operation.method} ${operation.path}`;
        sentLabels.set(`fuzz-${number}`, `${key} (${mutated.label})`);
        const counts = byOperation.get(key) ?? {};
        byOperation.set(key, counts);
        try {
          const sentAt = performance.now();
          const res = await send(`${node.baseUrl}${path}`, operation.method, headers, mutated.body, `127.0.0.${2 + Math.floor(random() * 253)}`);
          const text = res.text;
          slowest.push({ ms: Math.round(performance.now() - sentAt), request: `${operation.method} ${operation.path} (${mutated.label})`, status: res.status });
          slowest.sort((a, b) => b.ms - a.ms).splice(10);
          const bucket = `${Math.floor(res.status / 100)}xx`;
          counts[bucket] = (counts[bucket] ?? 0) + 1;
          // 501 (a feature the operator has not configured) and upstream/capacity statuses are answers, not faults.
          if (res.status >= 500 && ![501, 502, 503, 504].includes(res.status)) {
            serverErrors.push({ request: `${operation.method} ${basePath}${path.slice(0, 120)} (${mutated.label})`, status: res.status, body: text.slice(0, 300) });
          }
        } catch (error) {
          transportErrors++;
          counts.transport = (counts.transport ?? 0) + 1;
          serverErrors.push({ request: `${operation.method} ${path.slice(0, 120)} (${mutated.label})`, status: 0, body: String((error as Error).message) });
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (performance.now() - started) / 1000;
    clearInterval(lagTimer);
    const probeLatencies = await probe.stop();

    const alive = await fetch(`${node.baseUrl}/models`)
      .then((r) => r.status === 200)
      .catch(() => false);
    const totals: Record<string, number> = {};
    for (const counts of byOperation.values()) for (const [bucket, n] of Object.entries(counts)) totals[bucket] = (totals[bucket] ?? 0) + n;
    const probeSorted = [...probeLatencies].sort((a, b) => a - b);
    const report = {
      requests: TOTAL,
      concurrency: CONCURRENCY,
      seconds: Number(seconds.toFixed(1)),
      operations: operations.length,
      statusClasses: totals,
      unexpected5xx: serverErrors.filter((e) => e.status >= 500).length,
      transportErrors,
      nodeAliveAfter: alive,
      probeGetModelsMs: {
        count: probeSorted.length,
        p50: percentile(probeSorted, 50),
        p90: percentile(probeSorted, 90),
        p99: percentile(probeSorted, 99),
        max: probeSorted.at(-1),
      },
      eventLoopLagMs: {
        windows: lag.p99.length,
        medianOfP50: percentile(
          [...lag.p50].sort((a, b) => a - b),
          50,
        ),
        medianOfP99: percentile(
          [...lag.p99].sort((a, b) => a - b),
          50,
        ),
        worstP99: Math.max(...lag.p99),
        worstMax: Math.max(...lag.max),
      },
      // What held the node's loop 100 ms or more (its own stall watch), worst first.
      stalls: {
        count: node.stalls.length,
        atLeast200Ms: node.stalls.filter((stall) => stall.heldMs >= 200).length,
        worst: [...node.stalls]
          .sort((a, b) => b.heldMs - a.heldMs)
          .slice(0, 10)
          .map((stall) => ({ ...stall, inFlight: stall.inFlight.map((activity) => ({ ...activity, sent: sentLabels.get(String(activity.clientRequestId)) })) })),
      },
      slowestRequests: slowest,
      byOperation: Object.fromEntries([...byOperation].sort()),
      serverErrors: serverErrors.slice(0, 50),
    };
    log(`\n${TOTAL} requests in ${report.seconds} s over ${operations.length} operations`);
    log(
      `status classes: ${Object.entries(totals)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}`,
    );
    log(`unexpected 5xx (500 and others not 501-504): ${report.unexpected5xx}; transport errors: ${transportErrors}; node alive after: ${alive}`);
    const f = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "n/a" : n.toFixed(1));
    log(
      `probe GET /models (ms): p50 ${f(report.probeGetModelsMs.p50)}, p90 ${f(report.probeGetModelsMs.p90)}, p99 ${f(report.probeGetModelsMs.p99)}, max ${f(report.probeGetModelsMs.max)} over ${probeSorted.length} probes`,
    );
    log(
      `node event-loop lag (ms, per 1 s window): median p50 ${f(report.eventLoopLagMs.medianOfP50)}, median p99 ${f(report.eventLoopLagMs.medianOfP99)}, worst p99 ${f(report.eventLoopLagMs.worstP99)}, worst max ${f(report.eventLoopLagMs.worstMax)}`,
    );
    log(`event loop held 100 ms or more: ${report.stalls.count} times (200 ms or more: ${report.stalls.atLeast200Ms})`);
    for (const stall of report.stalls.worst.slice(0, 3)) {
      const inFlight = stall.inFlight.map((activity) =>
        [activity.sent ?? [activity.kind, activity.method, activity.route, activity.models].filter(Boolean).join(" "), `${activity.runningMs} ms`].join(", "),
      );
      log(
        `  ${stall.heldMs} ms, in flight: ${inFlight.join("; ") || "nothing"}${stall.moreInFlight ? ` and ${stall.moreInFlight} more` : ""}${stall.startedDuring ? `; ${stall.startedDuring} arrived meanwhile` : ""}`,
      );
    }
    for (const error of serverErrors.slice(0, 10)) log(`  ${error.status} ${error.request}: ${error.body}`);
    log("slowest requests:");
    for (const slow of slowest.slice(0, 5)) log(`  ${slow.ms} ms ${slow.status} ${slow.request}`);
    const out = resolve(ROOT, args.out!);
    mkdirSync(resolve(out, ".."), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    log(`written to ${out}`);
    if (!alive) process.exitCode = 1;
  } finally {
    node.child.kill("SIGTERM");
    await new Promise((r) => node.child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
