import type { LiveSnapshot, LiveStatus } from "../live.ts";

export interface PageProps {
  live: { snapshot: LiveSnapshot | null; status: LiveStatus };
}
