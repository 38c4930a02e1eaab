/** Milliseconds in an hour and in a (UTC) day: the units of the ledger's windows and the usage reports. */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
