const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * An ISO 8601 date (`2026-07-01`, UTC midnight) or date-time with a zone (`Z` or an offset; a
 * space may stand for the `T`), as epoch milliseconds; impossible dates such as 02-31 fail.
 */
export function parseIsoInstant(text: string): { ms: number; dateOnly: boolean } | undefined {
  const m = ISO_INSTANT.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)) return undefined;
  const ms = Date.parse(text.replace(" ", "T"));
  return Number.isNaN(ms) ? undefined : { ms, dateOnly: m[4] === undefined };
}
