import { randomBytes } from "node:crypto";

/** A new id in the standard's style: a type prefix (`resp`, `msg`, `fc`, `rs`, `ws`) and 48 random hex digits. */
export function itemId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString("hex")}`;
}
