import { z } from "zod";
import { parseIsoInstant } from "../billing/schema.js";

/**
 * API key management (the reference's API Keys tag) and the rate-limit queries. Key bodies
 * are strict: a misspelt setting is a 400, never silently ignored. `rateLimitTier` and
 * `rateLimits` are Hearth extensions (per-key rate-limit tier and overrides); a key's answers
 * carry them, with `isOperator`, only when asked with `?include=service_fields` (the reference's
 * key objects allow no other fields, and strict clients reject them).
 */

/** The opt-in to the key objects' extension fields (isOperator, rateLimitTier, rateLimits, isGateway). */
export const KeyFieldsQuery = z.looseObject({
  include: z
    .enum(["service_fields"])
    .optional()
    .describe("`service_fields`: each key object also carries this node's isOperator, rateLimitTier, rateLimits and isGateway (fields the reference's key objects do not have)"),
});
export type KeyFieldsQuery = z.infer<typeof KeyFieldsQuery>;

export const ApiKeyType = z.enum(["INFERENCE", "ADMIN"]);
export const LimitPeriod = z.enum(["EPOCH", "MONTH", "LIFETIME"]);
export const ModelPrivacy = z.enum(["ALL", "PRIVATE_TEXT", "PRIVATE_ONLY"]);
export type ModelPrivacy = z.infer<typeof ModelPrivacy>;
export const RateLimitTierName = z.enum(["standard", "partner"]);

/** Whole USD / DIEM per limit period; null removes the limit. */
const LimitAmount = z.number().min(0).max(9_999_999_999).nullable();

export const ConsumptionLimit = z.strictObject({
  usd: LimitAmount.optional(),
  diem: LimitAmount.optional(),
  /** Legacy (VCU is superseded by DIEM): accepted and ignored. */
  vcu: LimitAmount.optional(),
});
export type ConsumptionLimit = z.infer<typeof ConsumptionLimit>;

/** '' (no expiry), YYYY-MM-DD (UTC midnight) or YYYY-MM-DDTHH:MM:SS(.mmm)Z. */
export const ExpiresAt = z.union([
  z.literal(""),
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{3})?Z)?$/, "expected '', YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS(.mmm)Z")
    .refine((value) => parseIsoInstant(value) !== undefined, "not a valid date"),
]);

/** Hearth extension: limits per class (`text:XS`..`text:L`, `image`, `audio`, `embedding`, `video_queue`, `video_retrieve`) or `*`. */
export const LimitClassName = z.enum(["*", "text:XS", "text:S", "text:M", "text:L", "image", "audio", "embedding", "video_queue", "video_retrieve", "augment"]);
export const RateLimitOverrides = z.partialRecord(LimitClassName, z.strictObject({ rpm: z.number().int().positive().optional(), tpm: z.number().int().positive().optional() }));

const SettingFields = {
  consumptionLimit: ConsumptionLimit.optional(),
  /** The responses' spelling, accepted as an alias. */
  consumptionLimits: ConsumptionLimit.optional(),
  limitPeriod: LimitPeriod.optional(),
  modelPrivacy: ModelPrivacy.optional(),
  description: z.string().max(64, "description is at most 64 characters"),
  rateLimitTier: RateLimitTierName.optional(),
  /** null removes every override. */
  rateLimits: RateLimitOverrides.nullable().optional(),
  isGateway: z
    .boolean()
    .optional()
    .describe(
      "Hearth, operator only: an inference key for a gateway that relays many callers to this node (docs/scaling.md): no per-key rate limits, no abuse block, no one caller's share of the body budget",
    ),
};

export const CreateApiKeyRequest = z.strictObject({
  ...SettingFields,
  apiKeyType: ApiKeyType,
  expiresAt: ExpiresAt.optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequest>;

/** POST /api_keys/generate_web3_key: a key's settings, and the wallet's signature of a token from GET. */
export const Web3KeyRequest = CreateApiKeyRequest.extend({
  address: z.string().min(1).describe("The wallet's EVM address"),
  signature: z.string().min(1).describe("The token's text signed with personal_sign (EIP-191)"),
  token: z.string().min(1).describe("From GET /api_keys/generate_web3_key; single use, valid for web3Keys.tokenTtlSeconds"),
  description: z.string().max(64, "description is at most 64 characters").default("Web3 API Key"),
});
export type Web3KeyRequest = z.infer<typeof Web3KeyRequest>;

export const Web3KeyToken = z.object({ success: z.literal(true), data: z.object({ token: z.string() }) });

export const UpdateApiKeyRequest = z.strictObject({
  ...SettingFields,
  id: z.string().min(1),
  description: SettingFields.description.optional(),
  /** '' or null removes the expiry. */
  expiresAt: ExpiresAt.nullable().optional(),
});
export type UpdateApiKeyRequest = z.infer<typeof UpdateApiKeyRequest>;

/** Without `id` (the provider makes it optional) the key making the request is the one deleted. */
export const DeleteApiKeyQuery = z.looseObject({ id: z.string().min(1, "id must name a key of this account").optional() });

const LimitsWire = z.object({ usd: z.number().nullable(), diem: z.number().nullable(), vcu: z.number().nullable() });
const AmountStrings = z.object({ usd: z.string(), diem: z.string() });

export const ApiKeyWire = z.object({
  id: z.string(),
  apiKeyType: ApiKeyType,
  description: z.string(),
  consumptionLimits: LimitsWire,
  limitPeriod: LimitPeriod,
  modelPrivacy: ModelPrivacy,
  createdAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
  last6Chars: z.string(),
  /** Hearth (with ?include=service_fields): the node operator's key (grants credit, manages the node); never one made through this API. */
  isOperator: z.boolean().optional(),
  usage: z.object({ trailingSevenDays: AmountStrings.extend({ vcu: z.string() }) }).optional(),
  /** Only for keys with a consumption limit. */
  currentPeriodUsage: AmountStrings.optional(),
  /** Hearth (with ?include=service_fields). */
  rateLimitTier: RateLimitTierName.optional(),
  /** Hearth (with ?include=service_fields). */
  rateLimits: RateLimitOverrides.nullable().optional(),
  /** Hearth (with ?include=service_fields): a gateway's key (see isGateway in the requests). */
  isGateway: z.boolean().optional(),
});
export type ApiKeyWire = z.infer<typeof ApiKeyWire>;

export const ApiKeyList = z.object({ object: z.literal("list"), data: z.array(ApiKeyWire) });

export const CreateApiKeyResponse = z.object({
  success: z.literal(true),
  data: z.object({
    /** The secret: shown this once. */
    apiKey: z.string(),
    id: z.string(),
    apiKeyType: ApiKeyType,
    description: z.string(),
    consumptionLimit: LimitsWire,
    limitPeriod: LimitPeriod,
    modelPrivacy: ModelPrivacy,
    expiresAt: z.string().nullable(),
    /** Hearth (with ?include=service_fields). */
    rateLimitTier: RateLimitTierName.optional(),
    /** Hearth (with ?include=service_fields). */
    rateLimits: RateLimitOverrides.nullable().optional(),
    /** Hearth (with ?include=service_fields). */
    isGateway: z.boolean().optional(),
  }),
});
export type CreateApiKeyResponse = z.infer<typeof CreateApiKeyResponse>;

export const RateLimitsResponse = z.object({
  data: z.object({
    accessPermitted: z.boolean(),
    apiTier: z.object({ id: z.string(), isCharged: z.boolean() }),
    balances: z.object({ USD: z.number(), DIEM: z.number() }),
    keyExpiration: z.string().nullable(),
    nextEpochBegins: z.string(),
    rateLimits: z.array(z.object({ apiModelId: z.string(), rateLimits: z.array(z.object({ amount: z.number(), type: z.enum(["RPM", "TPM"]) })) })),
  }),
});
export type RateLimitsResponse = z.infer<typeof RateLimitsResponse>;

export const RateLimitLogResponse = z.object({
  object: z.literal("list"),
  data: z.array(
    z.object({
      apiKeyId: z.string().nullable(),
      /** Null for limits not tied to a model (failed-request blocks, billing usage). */
      modelId: z.string().nullable(),
      rateLimitTier: z.string(),
      rateLimitType: z.string(),
      timestamp: z.string(),
    }),
  ),
});
export type RateLimitLogResponse = z.infer<typeof RateLimitLogResponse>;

export const GetApiKeyResponse = z.object({ data: ApiKeyWire });
export const UpdateApiKeyResponse = z.object({ success: z.literal(true), data: ApiKeyWire });
export type UpdateApiKeyResponse = z.infer<typeof UpdateApiKeyResponse>;
export const DeleteApiKeyResponse = z.object({ success: z.literal(true) });
