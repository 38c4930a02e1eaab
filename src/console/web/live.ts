import { useEffect, useState } from "preact/hooks";

/** The live view's push (see src/console/LiveHub.ts). Fields may be missing on older servers. */
export interface LiveModel {
  id: string;
  type?: string;
  backend?: string;
  state?: "unloaded" | "loading" | "loaded" | "failed";
  error?: string | null;
  memory?: { ramBytes?: number | null; vramBytes?: number | null };
  inFlight?: number;
  queue?: { busy?: number; waiting?: number };
  loadedAt?: string | null;
  lastUsedAt?: string | null;
  keepAliveSeconds?: number | null;
  /** A loaded upstream model's pool. */
  replicas?: LiveReplica[] | null;
}

/** One replica of an upstream pool (see ReplicaStatus in src/engines/upstream/ReplicaPool.ts). */
export interface LiveReplica {
  baseUrl: string;
  weight?: number;
  maxInFlight?: number | null;
  healthy?: boolean;
  ejectedUntil?: number | null;
  inFlight?: number;
  requests?: number;
  errors?: number;
  lastLatencyMs?: number | null;
  lastError?: string | null;
}

export interface LiveRequest {
  seq: number;
  at: number;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  model: string | null;
}

/** Memory the loaded models use, against the operator's budget (limitBytes null: none set). */
export interface BudgetUse {
  limitBytes: number | null;
  usedBytes: number;
}

export interface LiveSnapshot {
  type: "snapshot";
  at: string;
  models: LiveModel[];
  requests: LiveRequest[];
  budget?: { ram?: BudgetUse; vram?: BudgetUse };
}

export type LiveStatus = "connecting" | "live" | "closed" | "refused";

/**
 * One WebSocket per page that uses it. The key goes in the first message, never in the URL.
 * A dropped connection is retried every 2 s; a refused key (4401/4403) is not. Not opened
 * for an account admin's key (`enabled` false).
 */
export function useLive(key: string, enabled = true): { snapshot: LiveSnapshot | null; status: LiveStatus } {
  const [snapshot, setSnapshot] = useState<LiveSnapshot | null>(null);
  const [status, setStatus] = useState<LiveStatus>("connecting");
  useEffect(() => {
    // The live view is node-wide: only the operator's key may open it.
    if (!enabled) return;
    let socket: WebSocket | undefined;
    let retry: number | undefined;
    let stopped = false;
    const connect = () => {
      setStatus("connecting");
      socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/v1/admin/live`);
      socket.onopen = () => socket?.send(JSON.stringify({ type: "auth", key }));
      socket.onmessage = (event) => {
        const message = JSON.parse(String(event.data)) as LiveSnapshot;
        if (message.type === "snapshot") {
          setSnapshot(message);
          setStatus("live");
        }
      };
      socket.onclose = (event) => {
        if (stopped) return;
        if (event.code === 4401 || event.code === 4403) {
          setStatus("refused");
          return;
        }
        setStatus("closed");
        retry = window.setTimeout(connect, 2000);
      };
    };
    connect();
    return () => {
      stopped = true;
      window.clearTimeout(retry);
      socket?.close(1000);
    };
  }, [key, enabled]);
  return { snapshot, status };
}
