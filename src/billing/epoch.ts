import { DAY_MS, HOUR_MS } from "../time.js";

/**
 * Billing epochs: a UTC day that starts at the configured reset hour. DIEM allocations refill
 * at each epoch start and per-key EPOCH limits reset then.
 */

export type LimitPeriod = "EPOCH" | "MONTH" | "LIFETIME";

/** The epoch number (days since 1970 counted from the reset hour) that `now` falls in. */
export function epochOf(now: number, resetHourUtc: number): number {
  return Math.floor((now - resetHourUtc * HOUR_MS) / DAY_MS);
}

export function epochStart(epoch: number, resetHourUtc: number): number {
  return epoch * DAY_MS + resetHourUtc * HOUR_MS;
}

export function nextEpochStart(now: number, resetHourUtc: number): number {
  return epochStart(epochOf(now, resetHourUtc) + 1, resetHourUtc);
}

/** Start of the window a per-key consumption limit counts spending in. */
export function periodStart(period: LimitPeriod, now: number, resetHourUtc: number): number {
  switch (period) {
    case "EPOCH":
      return epochStart(epochOf(now, resetHourUtc), resetHourUtc);
    case "MONTH": {
      const d = new Date(now);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    case "LIFETIME":
      return 0;
  }
}
