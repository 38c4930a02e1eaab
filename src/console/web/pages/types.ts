import type { LiveSnapshot, LiveStatus } from "../live.ts";

export interface PageProps {
  live: { snapshot: LiveSnapshot | null; status: LiveStatus };
  /** The logged-in key is the node operator's (node-wide pages, granting credit); else an account admin's. */
  operator: boolean;
}
