import type { UpstreamSettings } from "./backendSettings.js";

/** One replica of an upstream pool as the engines use it: its URL and key resolved from the environment. */
export interface ResolvedReplica {
  /** Without a trailing slash (paths such as /chat/completions are appended). */
  baseUrl: string;
  apiKey: string | undefined;
  weight: number;
  maxInFlight: number | undefined;
}

/**
 * The replicas of an upstream model after `resolveUpstream`: the `replicas` list, or the single
 * `baseUrl` as a pool of one. Each replica without a key of its own uses the pool's. A replica
 * whose base URL is still unset (its variable is missing) is named in `unresolved`.
 */
export function upstreamReplicas(upstream: UpstreamSettings): { replicas: ResolvedReplica[]; unresolved: string[] } {
  const listed = upstream.replicas ?? [{ baseUrl: upstream.baseUrl, baseUrlEnv: upstream.baseUrlEnv, apiKey: undefined, weight: 1, maxInFlight: undefined }];
  const replicas: ResolvedReplica[] = [];
  const unresolved: string[] = [];
  listed.forEach((replica, index) => {
    if (!replica.baseUrl) {
      unresolved.push(replica.baseUrlEnv ? `${replica.baseUrlEnv} is not set` : upstream.replicas ? `replica ${index} has no baseUrl` : "no upstream.baseUrl");
      return;
    }
    replicas.push({
      baseUrl: replica.baseUrl.replace(/\/+$/, ""),
      apiKey: replica.apiKey ?? upstream.apiKey,
      weight: replica.weight,
      maxInFlight: replica.maxInFlight,
    });
  });
  return { replicas, unresolved };
}

/** A base URL as it may be shown and used as a metric label: no user name, password, query or fragment. */
export function displayBaseUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/+$/, "");
  } catch {
    return "(invalid URL)";
  }
}
