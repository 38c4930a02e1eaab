import { z } from "zod";
import { DetailedErrorResponse, ErrorResponse } from "../../errors.js";
import { PaymentRequiredResponse } from "../x402/schema.js";
import type { Access, ApiGroup, Content, Operation, ResponseSpec } from "./Operation.js";

/**
 * Builds the OpenAPI 3.1 document from the endpoint groups' operation lists. Request bodies,
 * query and path parameters are the input side of the zod schemas the routes parse with
 * (`io: "input"`: defaults optional, transforms and preprocessing invisible); responses are
 * the output side (`io: "output"`: closed objects, so an undocumented field is a drift the
 * tests catch). Every zod schema a group's schema.ts exports is a named component.
 */

type Json = Record<string, unknown>;
type Io = "input" | "output";

export const COMPONENT_PREFIX = "#/components/schemas/";
const LOCAL_PREFIX = "#/$defs/";

export interface DocumentInfo {
  version: string;
}

export function buildOpenApiDocument(groups: readonly ApiGroup[], info: DocumentInfo): Json {
  const emitter = new SchemaEmitter();
  emitter.register("ErrorResponse", ErrorResponse, "src/errors.ts");
  emitter.register("DetailedErrorResponse", DetailedErrorResponse, "src/errors.ts");
  for (const group of groups) {
    for (const [name, value] of Object.entries(group.schemas)) {
      if (value instanceof z.ZodType) emitter.register(name, value, `the ${group.tag} group's schema.ts`);
    }
  }

  const paths: Record<string, Record<string, Json>> = {};
  const operationIds = new Set<string>();
  for (const group of groups) {
    for (const op of group.operations) {
      const item = (paths[op.path] ??= {});
      if (item[op.method]) throw new Error(`OpenAPI: ${op.method.toUpperCase()} ${op.path} is documented twice`);
      if (operationIds.has(op.operationId)) throw new Error(`OpenAPI: operationId "${op.operationId}" is used twice`);
      operationIds.add(op.operationId);
      item[op.method] = operationObject(op, group, emitter);
    }
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Hearth API",
      version: info.version,
      description: [
        "A self-hosted inference node: chat completions, speech, transcription, images, video, embeddings, prepaid credits and API keys.",
        "",
        "Authenticate with an API key (`Authorization: Bearer <key>`, from `hearth keys create`) or, on paid endpoints, a wallet sign-in (`SIGN-IN-WITH-X`, with x402 top-ups).",
        "The wire names are neutral: `service_parameters`, `include_service_system_prompt` and the `x-service-*` headers. The provider's spellings (`venice_parameters`, `include_venice_system_prompt`, `x-venice-*` request headers) are accepted as input aliases.",
        'Errors answer `{ "error": "message" }` (with a `code` where one is defined); a 400 adds `details`, the zod issue tree naming the offending field. A node started with `--error-format standard` answers `{ "error": { "message", "type", "code", "param" } }` instead.',
        "Every response carries `CF-RAY` (the node's id for the request) and `x-request-id` (the client's own `X-Request-Id` when it sent a usable one, else the same id). The paths are also served under `/v1`.",
      ].join("\n"),
    },
    servers: [{ url: "/api/v1", description: "This node" }],
    // Groups may share a tag (chat and legacy completions are both Chat): listed once, first description.
    tags: groups.filter((g, i) => groups.findIndex((o) => o.tag === g.tag) === i).map((g) => ({ name: g.tag, description: g.description })),
    paths,
    components: {
      schemas: emitter.finish(),
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: `Authorization: Bearer <key>` (`hearth keys create`; admin keys manage keys)." },
        walletSignIn: {
          type: "apiKey",
          in: "header",
          name: "SIGN-IN-WITH-X",
          description:
            "A wallet sign-in (x402 sign-in-with-x): base64 JSON of the signed message and signature. `X-Sign-In-With-X` is accepted too. Paid endpoints draw on the wallet's x402 top-ups.",
        },
      },
    },
  };
}

const SECURITY: Record<Access, Json[]> = {
  public: [],
  apiKey: [{ apiKey: [] }],
  adminKey: [{ apiKey: [] }],
  paid: [{ apiKey: [] }, { walletSignIn: [] }],
  wallet: [{ walletSignIn: [] }],
};

/** The errors every operation of an access kind can answer, before its own handler runs. */
const ACCESS_ERRORS: Record<Access, Record<number, string>> = {
  public: {},
  apiKey: { 401: "Missing, unknown, revoked or expired API key", 429: "Too many failed requests: the caller is blocked for 30 s" },
  adminKey: {
    401: "Missing, unknown, revoked or expired API key",
    403: "An inference key was used: this needs an admin key",
    429: "Too many failed requests: the caller is blocked for 30 s",
  },
  paid: {
    401: "Invalid API key, or an invalid wallet sign-in (`code` X402_INVALID_SIGN_IN)",
    402: "No credentials at all (the x402 discovery answer: how to pay or sign in), or too little credit (`code` INSUFFICIENT_BALANCE)",
    429: "Rate limit exceeded (the `x-ratelimit-*` headers say when to retry), or too many failed requests",
  },
  wallet: { 401: "Missing or invalid SIGN-IN-WITH-X header", 429: "Too many failed requests: the caller is blocked for 30 s" },
};

function operationObject(op: Operation, group: ApiGroup, emitter: SchemaEmitter): Json {
  const parameters = [
    ...(op.params ? emitter.parameters(op.params, "path") : []),
    ...(op.query ? emitter.parameters(op.query, "query") : []),
    ...Object.entries(op.headers ?? {}).map(([name, h]) => ({ name, in: "header", required: h.required ?? false, description: h.description, schema: { type: "string" } })),
  ];
  const errors: Record<number, string> = { ...ACCESS_ERRORS[op.access] };
  // Path parameters are validated by some routes only: those list their 400 in `errors`.
  if (op.body || op.query) errors[400] = "Invalid request: `error` and `details` name the offending field";
  if (op.body?.content["application/json"]) {
    errors[415] = "The body is not application/json";
    errors[413] = "The body is larger than this route accepts (`code` PAYLOAD_TOO_LARGE; the message names the limit)";
  }
  if (op.body?.content["multipart/form-data"]) errors[413] = "The upload is larger than the node's limit (`code` PAYLOAD_TOO_LARGE)";
  Object.assign(errors, op.errors);

  const responses: Record<string, Json> = {};
  for (const [status, description] of Object.entries(errors)) {
    const schema =
      Number(status) === 400 ? DetailedErrorResponse : Number(status) === 402 && op.access === "paid" ? z.union([ErrorResponse, PaymentRequiredResponse]) : ErrorResponse;
    responses[status] = responseObject({ description, content: { "application/json": schema } }, emitter);
  }
  for (const [status, spec] of Object.entries(op.responses)) responses[status] = responseObject(spec, emitter);

  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags ?? [group.tag],
    ...(op.deprecated ? { deprecated: true } : {}),
    security: SECURITY[op.access],
    ...(parameters.length ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: op.body.required ?? true,
            ...(op.body.description ? { description: op.body.description } : {}),
            content: contentObject(op.body.content, "input", emitter),
          },
        }
      : {}),
    responses: sortByStatus(responses),
  };
}

function responseObject(spec: ResponseSpec, emitter: SchemaEmitter): Json {
  return {
    description: spec.description,
    ...(spec.headers ? { headers: Object.fromEntries(Object.entries(spec.headers).map(([name, description]) => [name, { description, schema: { type: "string" } }])) } : {}),
    ...(spec.content ? { content: contentObject(spec.content, "output", emitter) } : {}),
  };
}

function contentObject(content: Content, io: Io, emitter: SchemaEmitter): Json {
  const out: Json = {};
  for (const [type, schema] of Object.entries(content)) {
    if (schema instanceof z.ZodType) out[type] = { schema: emitter.emit(schema, io) };
    else if ("sse" in schema) {
      out[type] = {
        schema: { type: "string", description: schema.description },
        // OpenAPI 3.1 has no item schema for event streams: the JSON each `data:` line carries is given here.
        "x-sse-data": emitter.emit(schema.sse, io),
      };
    } else if ("fields" in schema) {
      const files = Object.entries(schema.files);
      const fileParts = {
        type: "object",
        properties: Object.fromEntries(files.map(([name, description]) => [name, { type: "string", contentMediaType: "application/octet-stream", description }])),
        required: files.map(([name]) => name),
      };
      out[type] = { schema: { allOf: [emitter.emit(schema.fields, io), fileParts] } };
    } else out[type] = { schema: { ...schema } };
  }
  return out;
}

const sortByStatus = (responses: Record<string, Json>) => Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));

/**
 * Turns zod schemas into JSON Schema 2020-12 fragments whose registered (exported) sub-schemas
 * are `$ref`s to components. Input and output renderings of one schema may differ (defaults,
 * closed objects); when they do, the input one is named `<Name>Input`.
 */
class SchemaEmitter {
  private readonly registry = z.registry<{ id: string }>();
  private readonly byName = new Map<string, { schema: z.ZodType; where: string }>();
  private readonly defs: Record<Io, Map<string, Json>> = { input: new Map(), output: new Map() };
  private readonly fragments: { json: unknown; io: Io }[] = [];

  register(name: string, schema: z.ZodType, where: string): void {
    const known = this.byName.get(name);
    if (known?.schema === schema) return;
    if (known)
      throw new Error(`OpenAPI: two different schemas are exported as "${name}" (${known.where} and ${where}); component names must be unique, so rename one or import the other`);
    if (this.registry.has(schema)) return; // the same schema re-exported under a second name keeps its first
    this.byName.set(name, { schema, where });
    this.registry.add(schema, { id: name });
  }

  /** `track`: the fragment goes into the document (its references are rewritten and count as uses). */
  emit(schema: z.ZodType, io: Io, track = true): Json {
    const json = z.toJSONSchema(schema, {
      metadata: this.registry,
      io,
      target: "draft-2020-12",
      unrepresentable: "any",
      // Descriptions given with .describe()/.meta() live in zod's global registry, which a custom metadata registry hides.
      override: ({ zodSchema, jsonSchema }) => {
        const description = z.globalRegistry.get(zodSchema)?.description;
        if (description && jsonSchema.description === undefined) jsonSchema.description = description;
      },
    }) as Json;
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, Json>;
    delete json.$defs;
    for (const [name, def] of Object.entries(defs)) if (!this.defs[io].has(name)) this.defs[io].set(name, def);
    if (track) this.fragments.push({ json, io });
    return json;
  }

  /** One parameter per property of an object schema (its input side). */
  parameters(schema: z.ZodType, where: "path" | "query"): Json[] {
    let object = this.emit(schema, "input", false);
    // A registered schema renders as a $ref; parameters need the object itself.
    for (let ref = object.$ref; typeof ref === "string"; ref = object.$ref) object = this.defs.input.get(ref.slice(LOCAL_PREFIX.length)) ?? {};
    const properties = (object.properties ?? {}) as Record<string, Json>;
    const required = new Set((object.required ?? []) as string[]);
    return Object.entries(properties).map(([name, property]) => {
      const { description, ...rest } = structuredClone(property);
      this.fragments.push({ json: rest, io: "input" });
      return { name, in: where, required: where === "path" || required.has(name), ...(description ? { description } : {}), schema: rest };
    });
  }

  /** The components, named; rewrites every `#/$defs/` reference handed out so far to point at them. */
  finish(): Record<string, Json> {
    const inputName = (name: string) => {
      const output = this.defs.output.get(name);
      return output && JSON.stringify(output) !== JSON.stringify(this.defs.input.get(name)) ? `${name}Input` : name;
    };
    const rename = (io: Io) => (name: string) => (io === "input" ? inputName(name) : name);
    const components: Record<string, Json> = {};
    for (const [name, def] of this.defs.output) components[name] = rewriteRefs(def, rename("output")) as Json;
    for (const [name, def] of this.defs.input) components[inputName(name)] = rewriteRefs(def, rename("input")) as Json;
    for (const fragment of this.fragments) rewriteRefs(fragment.json, rename(fragment.io));
    // Only the components the document refers to (a query schema, say, is spread into parameters instead).
    const used = new Set<string>();
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key === "$ref" && typeof value === "string" && value.startsWith(COMPONENT_PREFIX)) {
            const name = value.slice(COMPONENT_PREFIX.length);
            if (!used.has(name)) {
              used.add(name);
              visit(components[name]);
            }
          } else visit(value);
        }
      }
    };
    for (const fragment of this.fragments) visit(fragment.json);
    return Object.fromEntries(
      Object.entries(components)
        .filter(([name]) => used.has(name))
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  }
}

/** Rewrites `#/$defs/<name>` references in place to component references. */
function rewriteRefs(node: unknown, rename: (name: string) => string): unknown {
  if (Array.isArray(node)) for (const item of node) rewriteRefs(item, rename);
  else if (node && typeof node === "object") {
    const object = node as Json;
    for (const [key, value] of Object.entries(object)) {
      if (key === "$ref" && typeof value === "string" && value.startsWith(LOCAL_PREFIX)) object.$ref = COMPONENT_PREFIX + rename(value.slice(LOCAL_PREFIX.length));
      else rewriteRefs(value, rename);
    }
  }
  return node;
}
