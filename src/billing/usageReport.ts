import type { UsageEntry } from "../api/billing/schema.js";
import type { UsageEntryRow } from "../store/usageEntries.js";
import { microsToUnits } from "./money.js";

/**
 * Usage entries (ledger charges with their request's usage) in the reference's JSON shape and
 * as CSV: one writer for the billing endpoints and `hearth credits usage`.
 */

/** Notes of a charge the ledger row leaves empty. */
const DEFAULT_NOTES = "API Inference";

export function toUsageEntry(row: UsageEntryRow): UsageEntry {
  return {
    timestamp: new Date(row.createdAt).toISOString(),
    sku: row.sku ?? "",
    pricePerUnitUsd: row.pricePerUnitUsd ?? 0,
    units: row.units ?? 0,
    amount: microsToUnits(row.micros),
    currency: row.currency,
    notes: row.note ?? DEFAULT_NOTES,
    inferenceDetails: row.requestId
      ? {
          requestId: row.requestId,
          inferenceExecutionTime: row.durationMs,
          promptTokens: row.promptTokens,
          completionTokens: row.completionTokens,
          ...(row.user !== null ? { user: row.user } : {}),
          ...(row.metadata !== null ? { metadata: JSON.parse(row.metadata) as Record<string, string> } : {}),
        }
      : null,
  };
}

/** The CSV columns of every usage export: the entry's fields with inferenceDetails flattened (metadata as JSON text). */
export const USAGE_CSV_COLUMNS = [
  "timestamp",
  "sku",
  "pricePerUnitUsd",
  "units",
  "amount",
  "currency",
  "notes",
  "requestId",
  "inferenceExecutionTime",
  "promptTokens",
  "completionTokens",
  "user",
  "metadata",
] as const;

const CRLF = "\r\n";

/** RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled; null is empty. */
function csvField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return "";
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const usageCsvHeader = () => USAGE_CSV_COLUMNS.join(",") + CRLF;

export function usageCsvRow(entry: UsageEntry): string {
  const details = entry.inferenceDetails;
  const values = [
    entry.timestamp,
    entry.sku,
    entry.pricePerUnitUsd,
    entry.units,
    entry.amount,
    entry.currency,
    entry.notes,
    details?.requestId,
    details?.inferenceExecutionTime,
    details?.promptTokens,
    details?.completionTokens,
    details?.user,
    // The labels as one JSON object.
    details?.metadata ? JSON.stringify(details.metadata) : undefined,
  ];
  return values.map(csvField).join(",") + CRLF;
}

export const usageCsv = (entries: readonly UsageEntry[]) => usageCsvHeader() + entries.map(usageCsvRow).join("");

/** `20260708T091530123Z`: a compact UTC stamp for export file names (sorts in time order). */
export const compactTimestamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, "");
