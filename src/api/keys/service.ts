import { toBalanceResponse } from "../../billing/balanceReport.js";
import type { Credits } from "../../billing/credits.js";
import { nextEpochStart } from "../../billing/epoch.js";
import { unitsToMicros } from "../../billing/money.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError, NotFoundError, PermissionDeniedError } from "../../errors.js";
import type { AuthContext, RequestContext } from "../../http/requestContext.js";
import type { Limits } from "../../limits/Limits.js";
import { keyModelPrivacy } from "../../limits/modelPrivacy.js";
import type { CallKind, LimitOverrides } from "../../limits/tiers.js";
import type { ModelManager } from "../../models/ModelManager.js";
import {
  accountKeyModelPrivacies,
  createApiKey,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  setKeyModelPrivacy,
  updateApiKey,
  type ApiKeyRecord,
  type ApiKeySettings,
} from "../../store/apiKeys.js";
import type { Db } from "../../store/Store.js";
import { inTransaction } from "../../store/transaction.js";
import { keySpendSince, recentRateLimitLog } from "../../store/usageEntries.js";
import type {
  ApiKeyWire,
  ConsumptionLimit,
  CreateApiKeyRequest,
  CreateApiKeyResponse,
  ModelPrivacy,
  RateLimitLogResponse,
  RateLimitsResponse,
  UpdateApiKeyRequest,
  UpdateApiKeyResponse,
} from "./schema.js";
import { DAY_MS } from "../../time.js";

/** The reference's cap on active keys per account. */
export const MAX_ACTIVE_KEYS = 500;
/** GET /api_keys/rate_limits/log: the last this many refusals. */
export const RATE_LIMIT_LOG_SIZE = 50;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const units = (micros: number | null) => (micros === null ? null : micros / 1_000_000);
/** Micros as an exact decimal string with six places ("10.242400"). */
const amountString = (micros: number) => `${Math.trunc(micros / 1_000_000)}.${String(micros % 1_000_000).padStart(6, "0")}`;

/** The call kind whose limit applies to a model (for GET /api_keys/rate_limits). */
export function callKindOf(entry: ModelEntry): CallKind | undefined {
  switch (entry.type) {
    case "text":
      return "chat";
    case "embedding":
      return "embedding";
    case "tts":
    case "asr":
    case "music":
      return "audio";
    case "image":
    case "upscale":
    case "inpaint":
      return "image";
    case "video":
      return "video_queue";
  }
}

export interface ApiKeyServiceOptions {
  db: Db;
  credits: Credits;
  models: ModelManager;
  limits: Limits;
  resetHourUtc: number;
  now: () => number;
}

/** Keys of the caller's account in the reference's shapes. Knows nothing about Express. */
export class ApiKeyService {
  constructor(private readonly options: ApiKeyServiceOptions) {}

  /** `serviceFields`: add isOperator, rateLimitTier and rateLimits (asked for with ?include=service_fields). */
  list(accountId: string, serviceFields = false): ApiKeyWire[] {
    const { db } = this.options;
    const privacy = accountKeyModelPrivacies(db, accountId);
    return listApiKeys(db, accountId)
      .filter((key) => key.revokedAt === null)
      .map((key) => this.toWire(key, privacy.get(key.id) ?? "ALL", true, serviceFields));
  }

  get(accountId: string, id: string, serviceFields = false): ApiKeyWire {
    const key = this.ownKey(accountId, id);
    return this.toWire(key, keyModelPrivacy(this.options.db, key.id), true, serviceFields);
  }

  create(accountId: string, request: CreateApiKeyRequest, callerIsOperator: boolean, serviceFields = false): CreateApiKeyResponse {
    requireOperatorForLimits(request, callerIsOperator);
    requireInferenceForGateway(request.apiKeyType, request);
    const { db, now } = this.options;
    const settings = this.settingsFrom(request);
    const { record, secret, privacy } = inTransaction(db, () => {
      const active = listApiKeys(db, accountId).filter((k) => k.revokedAt === null && (k.expiresAt === null || k.expiresAt > now())).length;
      if (active >= MAX_ACTIVE_KEYS) {
        throw new InvalidRequestError(`An account may have at most ${MAX_ACTIVE_KEYS} active API keys; delete one first.`);
      }
      const created = createApiKey(db, { accountId, description: request.description, keyType: request.apiKeyType, ...settings }, now());
      const privacy = request.modelPrivacy ?? "ALL";
      setKeyModelPrivacy(db, created.record.id, privacy);
      return { ...created, privacy };
    });
    const wire = this.toWire(record, privacy, false, serviceFields);
    return {
      success: true,
      data: {
        apiKey: secret,
        id: wire.id,
        apiKeyType: wire.apiKeyType,
        description: wire.description,
        consumptionLimit: wire.consumptionLimits,
        limitPeriod: wire.limitPeriod,
        modelPrivacy: wire.modelPrivacy,
        expiresAt: wire.expiresAt,
        ...(serviceFields ? { rateLimitTier: wire.rateLimitTier, rateLimits: wire.rateLimits, isGateway: wire.isGateway } : {}),
      },
    };
  }

  update(accountId: string, request: UpdateApiKeyRequest, callerIsOperator: boolean, serviceFields = false): UpdateApiKeyResponse {
    const { db } = this.options;
    const key = this.ownKey(accountId, request.id);
    requireOperatorFor(key, callerIsOperator, "change");
    requireOperatorForLimits(request, callerIsOperator);
    requireInferenceForGateway(key.keyType, request);
    const settings = this.settingsFrom(request);
    const updated = inTransaction(db, () => {
      const record = updateApiKey(db, key.id, settings)!;
      if (request.modelPrivacy) setKeyModelPrivacy(db, key.id, request.modelPrivacy);
      return record;
    });
    return { success: true, data: this.toWire(updated, keyModelPrivacy(db, key.id), false, serviceFields) };
  }

  /** DELETE revokes: the key stops working on its next request; its ledger history stays. */
  revoke(accountId: string, id: string, callerIsOperator: boolean): { success: true } {
    const key = this.ownKey(accountId, id);
    requireOperatorFor(key, callerIsOperator, "revoke");
    revokeApiKey(this.options.db, key.id, this.options.now());
    return { success: true };
  }

  rateLimits(ctx: RequestContext): RateLimitsResponse {
    const { db, credits, models, limits, now, resetHourUtc } = this.options;
    const auth = ctx.auth!;
    // Routed behind the API-key authenticator: a wallet never reaches here.
    const key = auth.kind === "apiKey" ? getApiKey(db, auth.apiKeyId) : undefined;
    const balance = toBalanceResponse(credits.snapshot(auth.accountId));
    const entries = models.list();
    const hasFreeModel = entries.some((m) => !m.pricing);
    return {
      data: {
        accessPermitted: balance.canConsume || hasFreeModel,
        apiTier: { id: auth.rateLimitTier, isCharged: entries.some((m) => m.pricing !== undefined) },
        balances: { USD: balance.balances.usd ?? 0, DIEM: balance.balances.diem ?? 0 },
        keyExpiration: iso(key?.expiresAt ?? null),
        nextEpochBegins: new Date(nextEpochStart(now(), resetHourUtc)).toISOString(),
        rateLimits: limits.describe(ctx, entries, callKindOf).map(({ entry, limit }) => ({
          apiModelId: entry.id,
          rateLimits: [{ amount: limit.rpm, type: "RPM" as const }, ...(limit.tpm === undefined ? [] : [{ amount: limit.tpm, type: "TPM" as const }])],
        })),
      },
    };
  }

  rateLimitLog(auth: AuthContext): RateLimitLogResponse {
    return {
      object: "list",
      data: recentRateLimitLog(this.options.db, auth.accountId, RATE_LIMIT_LOG_SIZE).map((row) => ({
        apiKeyId: row.apiKeyId,
        modelId: row.modelId,
        rateLimitTier: row.tier,
        rateLimitType: row.limitType,
        timestamp: new Date(row.createdAt).toISOString(),
      })),
    };
  }

  /** A live key of the caller's account; anything else (another account's, revoked, unknown) is a 404. */
  private ownKey(accountId: string, id: string): ApiKeyRecord {
    const key = getApiKey(this.options.db, id);
    if (!key || key.accountId !== accountId || key.revokedAt !== null) throw new NotFoundError(`No API key with id ${id} in this account`);
    return key;
  }

  /** Wire settings -> stored settings (micros, epoch ms, JSON); absent fields stay unchanged. */
  private settingsFrom(request: CreateApiKeyRequest | UpdateApiKeyRequest): ApiKeySettings {
    if (request.consumptionLimit && request.consumptionLimits) {
      throw InvalidRequestError.forField(["consumptionLimits"], "send consumptionLimit or its alias consumptionLimits, not both");
    }
    const limit: ConsumptionLimit | undefined = request.consumptionLimit ?? request.consumptionLimits;
    const micros = (value: number | null | undefined) => (value === undefined ? undefined : value === null ? null : unitsToMicros(value));
    const settings: ApiKeySettings = {
      description: request.description,
      limitUsdMicros: micros(limit?.usd),
      limitDiemMicros: micros(limit?.diem),
      limitPeriod: request.limitPeriod,
      rateLimitTier: request.rateLimitTier,
      gateway: request.isGateway,
    };
    if (request.expiresAt !== undefined) {
      if (request.expiresAt === null || request.expiresAt === "") settings.expiresAt = null;
      else {
        const expiresAt = Date.parse(request.expiresAt);
        if (expiresAt <= this.options.now()) throw InvalidRequestError.forField(["expiresAt"], "the expiry must be in the future");
        settings.expiresAt = expiresAt;
      }
    }
    if (request.rateLimits !== undefined) {
      settings.rateLimitOverrides = request.rateLimits && Object.keys(request.rateLimits).length > 0 ? JSON.stringify(request.rateLimits) : null;
    }
    return settings;
  }

  private toWire(key: ApiKeyRecord, modelPrivacy: ModelPrivacy, withUsage: boolean, serviceFields: boolean): ApiKeyWire {
    const { db, credits, now } = this.options;
    const wire: ApiKeyWire = {
      id: key.id,
      apiKeyType: key.keyType,
      description: key.description,
      consumptionLimits: { usd: units(key.limitUsdMicros), diem: units(key.limitDiemMicros), vcu: null },
      limitPeriod: key.limitPeriod,
      modelPrivacy,
      createdAt: iso(key.createdAt),
      expiresAt: iso(key.expiresAt),
      lastUsedAt: iso(key.lastUsedAt),
      last6Chars: key.last6,
      ...(serviceFields
        ? {
            isOperator: key.operator,
            rateLimitTier: key.rateLimitTier,
            rateLimits: key.rateLimitOverrides ? (JSON.parse(key.rateLimitOverrides) as LimitOverrides) : null,
            isGateway: key.gateway,
          }
        : {}),
    };
    if (withUsage) {
      const week = keySpendSince(db, key.id, now() - 7 * DAY_MS);
      wire.usage = { trailingSevenDays: { usd: amountString(week.usd), vcu: amountString(0), diem: amountString(week.diem) } };
      if (key.limitUsdMicros !== null || key.limitDiemMicros !== null) {
        const period = credits.keyPeriodSpend(key.id, key.limitPeriod);
        wire.currentPeriodUsage = { usd: amountString(period.usd), diem: amountString(period.diem) };
      }
    }
    return wire;
  }
}

/**
 * Rate limits are the node's resource, like credit: an account admin may keep a key on the
 * standard tier and its defaults, but only the operator may raise them (the partner tier or overrides).
 */
function requireOperatorForLimits(request: CreateApiKeyRequest | UpdateApiKeyRequest, callerIsOperator: boolean): void {
  if (callerIsOperator) return;
  if (request.rateLimitTier !== undefined && request.rateLimitTier !== "standard") {
    throw new PermissionDeniedError("rateLimitTier: only the node operator may put a key on another tier than standard");
  }
  if (request.rateLimits && Object.keys(request.rateLimits).length > 0) {
    throw new PermissionDeniedError("rateLimits: only the node operator may set a key's rate-limit overrides");
  }
  if (request.isGateway === true) throw new PermissionDeniedError("isGateway: only the node operator may make a gateway key");
}

/** A gateway key relays inference: an admin key never is one. */
function requireInferenceForGateway(keyType: ApiKeyRecord["keyType"], request: CreateApiKeyRequest | UpdateApiKeyRequest): void {
  if (request.isGateway === true && keyType !== "INFERENCE") throw InvalidRequestError.forField(["isGateway"], "a gateway key must be an INFERENCE key");
}

/** An operator key in an account is the operator's to change or revoke, not the account admins'. */
function requireOperatorFor(key: ApiKeyRecord, callerIsOperator: boolean, action: string): void {
  if (key.operator && !callerIsOperator) throw new PermissionDeniedError(`Only the node operator may ${action} an operator key.`);
}
