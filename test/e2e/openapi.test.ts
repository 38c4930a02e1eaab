import { validate as validateOpenApi } from "@scalar/openapi-parser";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { Express } from "express";
import { request } from "node:http";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_BASE_PATH } from "../../src/app.js";
import { UNAVAILABLE_IMAGE_OPERATIONS } from "../../src/api/images/schema.js";
import { tinyEmbeddingEntry, tinyVideoEntry } from "../helpers/mediaModels.js";
import { whilePoolBusy } from "../helpers/poolBusy.js";
import { providerDocument } from "../helpers/providerSchema.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * The served OpenAPI document against the running app: every registered route is documented
 * (and nothing else is), the document is valid OpenAPI 3.1 whose schemas all compile, and real
 * responses of a broad sample of endpoints validate against the schema documented for their
 * status, so a reply that drifts from its schema fails here.
 */

type Json = Record<string, any>;
const DOC_ID = "https://hearth.invalid/openapi.json";

let server: TestServer;
let doc: Json;
let ajv: InstanceType<typeof Ajv2020>;

beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyChatEntry(),
      tinyEmbeddingEntry({ pricing: { input: { usd: 2, diem: 2 } } }),
      tinyVideoEntry({ video: { durations: ["1s"], resolutions: { "64p": 64 }, fps: 2 } }),
    ],
    characters: [{ slug: "sage", name: "Sage", model: "tiny-chat", systemPrompt: "You are wise.", tags: ["wisdom"] }],
    config: { videoWorkers: 1 },
  });
  const res = await fetch(`${server.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Json;
  // OpenAPI keywords (discriminator, example...) and x- extensions are not JSON Schema: not strict.
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc, DOC_ID);
});
afterAll(async () => {
  await server?.stop();
});

const escapePointer = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");
const pointer = (...parts: string[]) => parts.map(escapePointer).join("/");

function at(root: Json, ref: string): unknown {
  let node: unknown = root;
  for (const part of ref.replace(/^#\//, "").split("/")) {
    if (!node || typeof node !== "object") return undefined;
    node = (node as Json)[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return node;
}

/** Every route the Express app registered, with Express paths turned into OpenAPI paths. */
function registeredRoutes(app: Express): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) if (method !== "_all") routes.push({ method, path: prefix + layer.route.path });
      } else if (Array.isArray(layer.handle?.stack)) {
        walk(layer.handle.stack, prefix + (layer.rawPath === "/" ? "" : String(layer.rawPath ?? "")));
      }
    }
  };
  walk((app as any).router.stack, "");
  return routes;
}
const toOpenApiPath = (expressPath: string) => expressPath.replace(/[:*]([A-Za-z0-9_]+)/g, "{$1}");

function documentedOperations(): string[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.keys(item as Json).map((method) => `${method.toUpperCase()} ${path}`));
}

/** The documented schema for a response, compiled; fails naming the operation when there is none. */
function responseSchema(method: string, path: string, status: number, contentType = "application/json") {
  const location = pointer("paths", path, method, "responses", String(status), "content", contentType, "schema");
  if (at(doc, location) === undefined) throw new Error(`openapi.json documents no ${contentType} body for ${method.toUpperCase()} ${path} ${status}`);
  return ajv.getSchema(`${DOC_ID}#/${location}`)!;
}

function expectMatches(method: string, path: string, status: number, body: unknown, location?: string) {
  const validate = location ? ajv.getSchema(`${DOC_ID}#/${location}`)! : responseSchema(method, path, status);
  if (!validate(body)) {
    throw new Error(
      `${method.toUpperCase()} ${path} ${status}: the body does not match its documented schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 800)}`,
    );
  }
}

/** Checks a real response: its status is documented, and its JSON body matches that status's schema. */
async function expectConforms(res: Response, method: string, path: string, status: number): Promise<any> {
  const text = await res.text();
  expect(res.status, `${method.toUpperCase()} ${path}: ${text.slice(0, 300)}`).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expectMatches(method, path, status, body);
  return body;
}

const auth = (key = server.adminKey) => ({ authorization: `Bearer ${key}` });
const get = (path: string, key: string | null = server.adminKey) => fetch(`${server.baseUrl}${path}`, { headers: key ? auth(key) : {} });

describe("route coverage", () => {
  it(`documents every route registered under ${API_BASE_PATH}, and only those`, () => {
    const registered = registeredRoutes(server.app)
      .filter((r) => r.path.startsWith(`${API_BASE_PATH}/`))
      .map((r) => `${r.method.toUpperCase()} ${toOpenApiPath(r.path.slice(API_BASE_PATH.length))}`);
    expect(registered.length).toBeGreaterThan(40);
    const documented = new Set(documentedOperations());
    // Routes that only answer a 404 naming what this node does not offer: no operation a client can use, so not documented.
    const notOffered = new Set(Object.keys(UNAVAILABLE_IMAGE_OPERATIONS).map((path) => `POST ${path}`));
    const missing = [...new Set(registered)].filter((op) => !documented.has(op) && !notOffered.has(op));
    expect(
      missing,
      `routes missing from openapi.json: add each to its group's operations.ts (src/api/<group>/operations.ts) and the group to src/api/openapi/apiGroups.ts:\n  ${missing.join("\n  ")}`,
    ).toEqual([]);
    const served = new Set(registered);
    const stale = [...documented].filter((op) => !served.has(op));
    expect(stale, `openapi.json documents operations no route serves:\n  ${stale.join("\n  ")}`).toEqual([]);
    expect([...notOffered].filter((op) => documented.has(op) || !served.has(op))).toEqual([]);
  });

  it("leaves out the routes that only answer 404 (media a node cannot serve), which still say so", async () => {
    for (const path of ["/images/variations"]) {
      expect(doc.paths[path], path).toBeUndefined();
      const res = await post(server, path, {});
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: string }).error).toMatch(/not available on this node/);
    }
    // Served where the node has the model: documented, and a 404 that says so here (no such model).
    for (const path of ["/image/upscale", "/image/background-remove"]) {
      expect(doc.paths[path], path).toBeDefined();
      const res = await post(server, path, { image: "aGk=" });
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: string }).error).toMatch(/not available on this node: no .* model is configured/);
    }
    for (const path of ["/image/edit", "/image/multi-edit"]) {
      expect(doc.paths[path], path).toBeDefined();
      const res = await post(server, path, { prompt: "x", image: "aGk=", images: ["aGk="] });
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: string }).error).toMatch(/serves no image models/);
    }
    // The standard's edit takes multipart only.
    expect(doc.paths["/images/edits"]).toBeDefined();
    const form = new FormData();
    form.set("prompt", "x");
    form.set("image", new Blob([Buffer.from("hi")], { type: "image/png" }), "a.png");
    const standard = await fetch(`${server.baseUrl}/images/edits`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(standard.status).toBe(404);
    expect(((await standard.json()) as { error: string }).error).toMatch(/serves no image models/);
  });

  it("finds a route that is not documented (the walk sees what routers register)", () => {
    const routes = registeredRoutes(server.app).map((r) => `${r.method.toUpperCase()} ${toOpenApiPath(r.path)}`);
    expect(routes).toContain("GET /api/v1/models/{id}");
    expect(routes).toContain("DELETE /api/v1/audio/voices/{id}");
    expect(routes).toContain("GET /docs");
  });
});

describe("document structure", () => {
  it("names every operation it shares with the provider's document with the provider's operation id (generated clients name methods after them)", () => {
    const provider = providerDocument() as { paths: Record<string, Record<string, { operationId?: string }>> };
    const differing: string[] = [];
    let shared = 0;
    for (const [path, operations] of Object.entries(provider.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const ours = doc.paths[path]?.[method]?.operationId;
        if (!operation?.operationId || ours === undefined) continue;
        shared++;
        if (ours !== operation.operationId) differing.push(`${method.toUpperCase()} ${path}: ${ours}, the provider's ${operation.operationId}`);
      }
    }
    expect(shared).toBeGreaterThan(35);
    expect(differing).toEqual([]);
  });

  it("lists every request header parameter the provider's document lists on an operation it serves (Accept-Encoding, SIGN-IN-WITH-X...)", () => {
    const provider = providerDocument() as { paths: Record<string, Record<string, { parameters?: { in: string; name: string; required?: boolean }[] }>> };
    const missing: string[] = [];
    let checked = 0;
    for (const [path, operations] of Object.entries(provider.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const ours = doc.paths[path]?.[method];
        if (!ours) continue;
        for (const parameter of (operation.parameters ?? []).filter((p) => p.in === "header")) {
          checked++;
          const found = ((ours.parameters ?? []) as Json[]).find((p) => p.in === "header" && p.name.toLowerCase() === parameter.name.toLowerCase());
          if (!found) missing.push(`${method.toUpperCase()} ${path}: ${parameter.name}`);
          else if (parameter.required && !found.required) missing.push(`${method.toUpperCase()} ${path}: ${parameter.name} is required there`);
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8);
    expect(missing).toEqual([]);
    expect(doc.paths["/chat/completions"].post.parameters).toContainEqual(expect.objectContaining({ name: "Accept-Encoding", in: "header" }));
    expect(doc.paths["/x402/balance/{walletAddress}"].get.parameters).toContainEqual(expect.objectContaining({ name: "SIGN-IN-WITH-X", in: "header", required: true }));
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/api/v1" })]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["apiKey", "walletSignIn"]);
    const result = await validateOpenApi(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("resolves every $ref", () => {
    const unresolved: string[] = [];
    const visit = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key === "$ref") {
            if (typeof value !== "string" || !value.startsWith("#/") || at(doc, value) === undefined) unresolved.push(String(value));
          } else visit(value);
        }
      }
    };
    visit(doc);
    expect(unresolved).toEqual([]);
  });

  it("compiles every component and every request and response schema with ajv (JSON Schema 2020-12)", () => {
    let compiled = 0;
    for (const name of Object.keys(doc.components.schemas)) {
      expect(ajv.getSchema(`${DOC_ID}#/${pointer("components", "schemas", name)}`), name).toBeTypeOf("function");
      compiled++;
    }
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const bodies = [
          ...Object.entries((op.requestBody?.content ?? {}) as Json).map(([type]) => pointer("paths", path, method, "requestBody", "content", type, "schema")),
          ...Object.entries(op.responses as Json).flatMap(([status, response]) =>
            Object.keys((response as Json).content ?? {}).map((type) => pointer("paths", path, method, "responses", status, "content", type, "schema")),
          ),
          ...((op.parameters ?? []) as Json[]).map((_p, i) => pointer("paths", path, method, "parameters", String(i), "schema")),
        ];
        for (const location of bodies) {
          expect(ajv.getSchema(`${DOC_ID}#/${location}`), location).toBeTypeOf("function");
          compiled++;
        }
      }
    }
    expect(compiled).toBeGreaterThan(150);
  });

  it("documents the neutral wire names, the provider aliases, the error shapes and the security of each operation", () => {
    const chat = doc.paths["/chat/completions"].post;
    expect(chat.security).toEqual([{ apiKey: [] }, { walletSignIn: [] }]);
    expect(Object.keys(chat.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "402", "404", "415", "429", "503"]));
    expect(Object.keys(chat.responses[200].content)).toEqual(["application/json", "text/event-stream"]);
    expect(chat.description).toContain("venice_parameters");
    const request = doc.components.schemas.ChatCompletionRequest;
    expect(request.properties.service_parameters).toBeDefined();
    expect(doc.components.schemas.ServiceParameters.properties.include_service_system_prompt).toBeDefined();
    expect(chat.responses[200].headers["x-service-model-id"]).toBeDefined();
    expect(chat.responses[400].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/DetailedErrorResponse" });
    expect(doc.paths["/models"].get.security).toEqual([]);
    expect(doc.paths["/api_keys"].get.responses[403]).toBeDefined();
    expect(Object.keys(doc.paths["/audio/transcriptions"].post.requestBody.content)).toEqual(["multipart/form-data"]);
    expect(Object.keys(doc.paths["/audio/speech"].post.responses[200].content)).toContain("audio/mpeg");
    expect(Object.keys(doc.paths["/billing/usage-history"].get.responses[200].content)).toContain("text/csv");
    expect(doc.paths["/billing/usage"].get.deprecated).toBe(true);
    // Request bodies are the input side (defaults optional); responses the output side (closed objects).
    expect(doc.components.schemas.CreateEmbeddingRequest.required).toEqual(["model", "input"]);
    expect(doc.components.schemas.CreateEmbeddingResponse.additionalProperties).toBe(false);
  });
});

describe("real responses match their documented schemas", () => {
  // The schema tests above can hold this process (server and client both) for longer than the
  // server's keep-alive timeout. Letting the event loop turn once lets that timeout close the idle
  // pooled socket before the next fetch would write on it (which read as ECONNRESET).
  beforeAll(() => new Promise((resolve) => setTimeout(resolve, 200)));

  it("models", async () => {
    await expectConforms(await get("/models", null), "get", "/models", 200);
    await expectConforms(await get("/models?type=video", null), "get", "/models", 200);
    await expectConforms(await get("/models/tiny-chat", null), "get", "/models/{id}", 200);
    await expectConforms(await get("/models/tiny-embedding", null), "get", "/models/{id}", 200);
    await expectConforms(await get("/models/no-such-model", null), "get", "/models/{id}", 404);
    await expectConforms(await get("/models?type=nonsense", null), "get", "/models", 400);
  });

  it("chat completions, whole and streamed", async () => {
    const body = await expectConforms(
      await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4, logprobs: true, top_logprobs: 2 }),
      "post",
      "/chat/completions",
      200,
    );
    expect(body.choices[0].message.role).toBe("assistant");

    const stream = await post(server, "/chat/completions", {
      model: "tiny-chat",
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(doc.paths["/chat/completions"].post.responses[200].content["text/event-stream"]["x-sse-data"]).toEqual({ $ref: "#/components/schemas/ChatCompletionChunk" });
    const events = (await stream.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expectMatches("post", "/chat/completions", 200, chunk, pointer("components", "schemas", "ChatCompletionChunk"));
  });

  it("responses, whole, streamed, stored and listed", async () => {
    const body = await expectConforms(
      await post(server, "/responses", { model: "tiny-chat", input: "Hi", max_output_tokens: 4, include: ["message.output_text.logprobs"], top_logprobs: 2 }),
      "post",
      "/responses",
      200,
    );
    expect(body.object).toBe("response");
    const auth = { headers: { authorization: `Bearer ${server.adminKey}` } };
    await expectConforms(await fetch(`${server.baseUrl}/responses/${body.id}`, auth), "get", "/responses/{id}", 200);
    await expectConforms(await fetch(`${server.baseUrl}/responses/${body.id}/input_items`, auth), "get", "/responses/{id}/input_items", 200);
    await expectConforms(await fetch(`${server.baseUrl}/responses/${body.id}`, { ...auth, method: "DELETE" }), "delete", "/responses/{id}", 200);

    const stream = await post(server, "/responses", { model: "tiny-chat", input: "Hi", max_output_tokens: 4, stream: true });
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await stream.text())
      .trim()
      .split("\n\n")
      .map((e) => JSON.parse(e.split("\n")[1]!.slice("data: ".length)));
    for (const event of events) expectMatches("post", "/responses", 200, event, pointer("components", "schemas", "ResponseStreamEvent"));
    expectMatches("post", "/responses", 200, events.at(-1).response, pointer("components", "schemas", "ResponseObject"));
  });

  it("legacy completions, whole (with logprobs and echo) and streamed", async () => {
    const body = await expectConforms(
      await post(server, "/completions", { model: "tiny-chat", prompt: ["Hi", "Ho"], max_tokens: 4, logprobs: 2, echo: true }),
      "post",
      "/completions",
      200,
    );
    expect(body.object).toBe("text_completion");
    expect(body.choices).toHaveLength(2);
    expect(body.choices[0].logprobs.token_logprobs[0]).toBeNull();

    const stream = await post(server, "/completions", { model: "tiny-chat", prompt: "Hi", max_tokens: 4, logprobs: 1, stream: true, stream_options: { include_usage: true } });
    expect(stream.status).toBe(200);
    expect(doc.paths["/completions"].post.responses[200].content["text/event-stream"]["x-sse-data"]).toEqual({ $ref: "#/components/schemas/CompletionChunk" });
    const events = (await stream.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.at(-1).usage.total_tokens).toBeGreaterThan(0);
    for (const chunk of chunks) expectMatches("post", "/completions", 200, chunk, pointer("components", "schemas", "CompletionChunk"));
  });

  it("a drifted reply fails its schema (the checks can fail)", async () => {
    const body = (await (await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).json()) as Json;
    expect(() => expectMatches("post", "/chat/completions", 200, { ...body, surprise: 1 })).toThrow(/surprise|additional/);
    const { usage: _dropped, ...withoutUsage } = body;
    expect(() => expectMatches("post", "/chat/completions", 200, withoutUsage)).toThrow(/usage/);
  });

  it("embeddings", async () => {
    await expectConforms(await post(server, "/embeddings", { model: "tiny-embedding", input: ["one", "two"] }), "post", "/embeddings", 200);
    await expectConforms(await post(server, "/embeddings", { model: "tiny-embedding", input: "one", encoding_format: "base64" }), "post", "/embeddings", 200);
  });

  it("billing", async () => {
    await expectConforms(await get("/billing/balance"), "get", "/billing/balance", 200);
    await expectConforms(await get("/billing/usage-history?pageSize=10"), "get", "/billing/usage-history", 200);
    await expectConforms(await get("/billing/usage-analytics?lookback=7d"), "get", "/billing/usage-analytics", 200);
    const csv = await fetch(`${server.baseUrl}/billing/usage-history`, { headers: { ...auth(), accept: "text/csv" } });
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(doc.paths["/billing/usage-history"].get.responses[200].content["text/csv"]).toBeDefined();
    await expectConforms(await get("/billing/usage-history?pageSize=5"), "get", "/billing/usage-history", 400);
  });

  it("API keys: list, create, get, update, revoke, rate limits", async () => {
    const { key: admin } = server.createKey({ operator: true, usd: 1 });
    await expectConforms(await get("/api_keys", admin), "get", "/api_keys", 200);
    const created = await expectConforms(
      await fetch(`${server.baseUrl}/api_keys`, {
        method: "POST",
        headers: { ...auth(admin), "content-type": "application/json" },
        body: JSON.stringify({ apiKeyType: "INFERENCE", description: "docs", consumptionLimit: { usd: 5 }, rateLimits: { image: { rpm: 3 } } }),
      }),
      "post",
      "/api_keys",
      200,
    );
    const id = created.data.id as string;
    await expectConforms(await get(`/api_keys/${id}`, admin), "get", "/api_keys/{id}", 200);
    await expectConforms(
      await fetch(`${server.baseUrl}/api_keys`, {
        method: "PATCH",
        headers: { ...auth(admin), "content-type": "application/json" },
        body: JSON.stringify({ id, description: "renamed" }),
      }),
      "patch",
      "/api_keys",
      200,
    );
    await expectConforms(await get("/api_keys/rate_limits", admin), "get", "/api_keys/rate_limits", 200);
    await expectConforms(await get("/api_keys/rate_limits/log", admin), "get", "/api_keys/rate_limits/log", 200);
    await expectConforms(await fetch(`${server.baseUrl}/api_keys?id=${id}`, { method: "DELETE", headers: auth(admin) }), "delete", "/api_keys", 200);
    await expectConforms(await get("/api_keys/no-such-key", admin), "get", "/api_keys/{id}", 404);
    await expectConforms(await get("/api_keys", created.data.apiKey), "get", "/api_keys", 401);
    const { key: inference } = server.createKey({ usd: 1 });
    await expectConforms(await get("/api_keys", inference), "get", "/api_keys", 403);
  });

  it("characters, image styles, RPC networks, cloned voices, the document itself", async () => {
    const list = await expectConforms(await get("/characters"), "get", "/characters", 200);
    expect(list.data.map((c: { slug: string }) => c.slug)).toEqual(["sage"]);
    await expectConforms(await get("/characters/sage"), "get", "/characters/{slug}", 200);
    await expectConforms(await get("/characters/nobody"), "get", "/characters/{slug}", 404);
    await expectConforms(await get("/image/styles", null), "get", "/image/styles", 200);
    await expectConforms(await get("/crypto/rpc/networks", null), "get", "/crypto/rpc/networks", 200);
    await expectConforms(await get("/audio/voices"), "get", "/audio/voices", 200);
    await expectConforms(await get("/openapi.json", null), "get", "/openapi.json", 200);
  });

  it("admin models: unloaded, and loaded with an ONNX model's execution provider", async () => {
    await expectConforms(await get("/admin/models"), "get", "/admin/models", 200);
    const loaded = await expectConforms(await post(server, "/admin/models/tiny-embedding/load", {}), "post", "/admin/models/{id}/load", 200);
    expect(loaded.data.executionProvider).toMatchObject({ name: "cpu", providers: ["cpu"] });
    const list = await expectConforms(await get("/admin/models"), "get", "/admin/models", 200);
    expect(list.data.find((m: { id: string }) => m.id === "tiny-embedding").executionProvider.reason).toBeTypeOf("string");
    expect(() => expectMatches("get", "/admin/models", 200, { ...list, data: [{ ...loaded.data, executionProvider: { name: "cpu" } }] })).toThrow(/executionProvider/);
  });

  it("video: quote, queue, retrieve", async () => {
    await expectConforms(await post(server, "/video/quote", { model: "tiny-video", duration: "1s" }), "post", "/video/quote", 200);
    const queued = await expectConforms(await post(server, "/video/queue", { model: "tiny-video", prompt: "a red square", duration: "1s", steps: 1 }), "post", "/video/queue", 200);
    const res = await post(server, "/video/retrieve", { model: "tiny-video", queue_id: queued.queue_id });
    if (res.headers.get("content-type")?.startsWith("video/mp4")) {
      expect(doc.paths["/video/retrieve"].post.responses[200].content["video/mp4"]).toBeDefined();
      await res.arrayBuffer();
    } else await expectConforms(res, "post", "/video/retrieve", 200);
    await expectConforms(await post(server, "/video/retrieve", { model: "tiny-video", queue_id: "no-such-job" }), "post", "/video/retrieve", 404);
  });

  it("error responses: 400, 401, 402, 404, 415", async () => {
    const { key } = server.createKey({ usd: 1 });
    const invalid = await expectConforms(await post(server, "/chat/completions", { model: "tiny-chat", messages: [] }, { key }), "post", "/chat/completions", 400);
    expect(invalid.details.messages).toBeDefined();
    await expectConforms(
      await post(server, "/chat/completions", { model: "no-such-model", messages: [{ role: "user", content: "Hi" }] }, { key }),
      "post",
      "/chat/completions",
      404,
    );
    await expectConforms(await post(server, "/chat/completions", "hello", { key, headers: { "content-type": "text/plain" } }), "post", "/chat/completions", 415);
    await expectConforms(
      await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hi" }] }, { key: "not-a-key" }),
      "post",
      "/chat/completions",
      401,
    );
    // No credentials at all on a paid endpoint: the x402 discovery answer.
    const discovery = await expectConforms(await post(server, "/embeddings", { model: "tiny-embedding", input: "x" }, { key: null }), "post", "/embeddings", 402);
    expect(discovery.x402Version).toBe(2);
    await expectConforms(await get("/billing/balance", "not-a-key"), "get", "/billing/balance", 401);
    const { key: broke } = server.createKey();
    const unpaid = await expectConforms(await post(server, "/embeddings", { model: "tiny-embedding", input: "x" }, { key: broke }), "post", "/embeddings", 402);
    expect(unpaid.code).toBe("INSUFFICIENT_BALANCE");
  });
});

describe("/docs", () => {
  it("serves an HTML page that loads only local assets, and the Scalar bundle itself", async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    const sources = [...html.matchAll(/<(?:script|link|img)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) expect(src).not.toMatch(/^(https?:)?\/\//);
    expect(html).toContain("/api/v1/openapi.json");
    const script = sources.find((s) => s.endsWith(".js"))!;
    const bundle = await fetch(new URL(script, `${server.url}/docs`));
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get("content-type")).toMatch(/javascript/);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
  });

  it("serves the Scalar bundle compressed and from memory: it arrives while every libuv pool thread is busy, and revalidates with its ETag", async () => {
    const url = `${server.url}/docs/scalar.js`;
    const whole = Buffer.from(await (await fetch(url, { headers: { "accept-encoding": "identity" } })).arrayBuffer());
    const { result: gzipped, beforeAnyFreed } = await whilePoolBusy(() => fetchRaw(url, { "accept-encoding": "gzip" }));
    expect(beforeAnyFreed).toBe(true);
    expect(gzipped.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gzipped.body).equals(whole)).toBe(true);
    const etag = String(gzipped.headers.etag);
    // (fetch() would add Cache-Control: no-cache to a conditional request, which asks for the body again.)
    expect((await fetchRaw(url, { "if-none-match": etag })).status).toBe(304);
  });
});

/** A GET whose body is the bytes the server sent (no decompression on the way). */
function fetchRaw(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const pieces: Buffer[] = [];
      res.on("data", (piece: Buffer) => pieces.push(piece));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(pieces) }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}
