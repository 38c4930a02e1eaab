import type { Replica } from "./ReplicaPool.js";

/**
 * One active health check: GET {baseUrl}/models with the replica's key, answered with a 2xx
 * within the timeout. Every server of the standard lists its models there, and it costs the
 * replica nothing (no generation, no credits on a Hearth).
 */
export async function checkReplicaHealth(replica: Replica, timeoutMs: number): Promise<boolean> {
  const { baseUrl, apiKey } = replica.settings;
  try {
    const response = await fetch(`${baseUrl}/models`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}
