import type { Request } from "express";

/**
 * x402 headers carry base64 (standard alphabet, padded) of UTF-8 JSON. Decoding is strict and
 * bounded: an oversized, non-base64 or non-object value is refused, never half-read.
 */

export const SIWX_HEADERS = ["sign-in-with-x", "x-sign-in-with-x"] as const;
export const PAYMENT_HEADERS = ["payment-signature", "x-402-payment", "x-payment"] as const;

/** The first of `names` the request carries (canonical names come first). */
export function firstHeader(req: Request, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = req.get(name);
    if (value !== undefined && value.trim() !== "") return value.trim();
  }
  return undefined;
}

export function encodeJsonHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

/** base64 (either alphabet, padding optional) -> a JSON object, or undefined. */
export function decodeJsonHeader(value: string, maxBytes: number): Record<string, unknown> | undefined {
  if (value.length > Math.ceil((maxBytes * 4) / 3) + 4) return undefined;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return undefined;
  const text = Buffer.from(value.replaceAll("-", "+").replaceAll("_", "/"), "base64").toString("utf8");
  try {
    const json = JSON.parse(text) as unknown;
    return typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
