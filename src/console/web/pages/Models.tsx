import { useState } from "preact/hooks";
import { apiFetch, bytes, errorText, when } from "../api.ts";
import type { LiveModel } from "../live.ts";
import type { PageProps } from "./types.ts";

/** Ids may hold '/' (openai/whisper-large-v3): each segment is encoded, the slashes stay. */
const modelPath = (id: string) => id.split("/").map(encodeURIComponent).join("/");

/**
 * Models with their load state and queues, and the most recent requests: both from the live
 * view, which also shows the outcome of the load and unload buttons (no reload needed).
 */
export function ModelsPage({ live }: PageProps) {
  const { snapshot, status } = live;
  const [pending, setPending] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const act = async (id: string, action: "load" | "unload") => {
    setPending(id);
    setError(null);
    try {
      await apiFetch(`/admin/models/${modelPath(id)}/${action}`, { method: "POST" });
    } catch (e) {
      setError(`${action === "load" ? "Loading" : "Unloading"} ${id}: ${errorText(e)}`);
    } finally {
      setPending(null);
    }
  };
  const budgetText = (name: string, use: { limitBytes: number | null; usedBytes: number } | undefined) =>
    use ? `${name} ${bytes(use.usedBytes)} of ${use.limitBytes === null ? "no budget" : bytes(use.limitBytes)}` : null;
  if (!snapshot) return <p class="muted">{status === "refused" ? "The live view refused this key." : "Connecting to the live view…"}</p>;
  return (
    <>
      <section>
        {snapshot.budget && (
          <p class="muted" id="budget">
            Estimated memory of the loaded models: {[budgetText("RAM", snapshot.budget.ram), budgetText("VRAM", snapshot.budget.vram)].filter(Boolean).join(" · ")}
          </p>
        )}
        <table class="grid" id="models">
          <thead>
            <tr>
              <th>Model</th>
              <th>Type</th>
              <th>Backend</th>
              <th>State</th>
              <th class="num">In flight</th>
              <th class="num">Waiting</th>
              <th class="num">RAM</th>
              <th class="num">VRAM</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {snapshot.models.map((m) => (
              <tr key={m.id} data-model={m.id}>
                <td>{m.id}</td>
                <td>{m.type ?? "–"}</td>
                <td>{m.backend ?? "–"}</td>
                <td>
                  <span class={`state ${m.state ?? "unknown"}`} data-state={m.state ?? "unknown"} title={m.error ?? undefined}>
                    {m.state ?? "unknown"}
                  </span>
                  {m.state === "failed" && m.error && <div class="error small">{m.error}</div>}
                </td>
                <td class="num">{m.inFlight ?? m.queue?.busy ?? 0}</td>
                <td class="num">{m.queue?.waiting ?? 0}</td>
                <td class="num">{bytes(m.memory?.ramBytes)}</td>
                <td class="num">{bytes(m.memory?.vramBytes)}</td>
                <td>{when(m.lastUsedAt)}</td>
                <td class="actions">
                  {m.state === "loaded" ? (
                    <button type="button" class="small" disabled={pending === m.id || (m.inFlight ?? 0) > 0} onClick={() => void act(m.id, "unload")}>
                      Unload
                    </button>
                  ) : (
                    <button type="button" class="small" disabled={pending === m.id || m.state === "loading"} onClick={() => void act(m.id, "load")}>
                      Load
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {snapshot.models.some((m) => m.replicas && m.replicas.length > 0) && <ReplicaTable models={snapshot.models} />}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </section>
      <section>
        <h2>Recent requests</h2>
        {snapshot.requests.length === 0 ? (
          <p class="muted">No API requests since the server started.</p>
        ) : (
          <table class="grid" id="requests">
            <thead>
              <tr>
                <th>Time</th>
                <th>Method</th>
                <th>Path</th>
                <th>Model</th>
                <th class="num">Status</th>
                <th class="num">Duration</th>
              </tr>
            </thead>
            <tbody>
              {snapshot.requests.map((r) => (
                <tr key={r.seq}>
                  <td>{new Date(r.at).toLocaleTimeString()}</td>
                  <td>{r.method}</td>
                  <td class="mono">{r.path}</td>
                  <td>{r.model ?? "–"}</td>
                  <td class={`num status s${Math.floor(r.status / 100)}`}>{r.status}</td>
                  <td class="num">{r.durationMs} ms</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

/** The replicas of each loaded upstream model: health, load and how they answer (GET /admin/models' `replicas`). */
function ReplicaTable({ models }: { models: LiveModel[] }) {
  const rows = models.flatMap((m) => (m.replicas ?? []).map((replica) => ({ model: m.id, replica })));
  return (
    <>
      <h2>Upstream replicas</h2>
      <table class="grid" id="replicas">
        <thead>
          <tr>
            <th>Model</th>
            <th>Replica</th>
            <th>Health</th>
            <th class="num">Weight</th>
            <th class="num">In flight</th>
            <th class="num">Requests</th>
            <th class="num">Errors</th>
            <th class="num">Latency</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ model, replica }) => (
            <tr key={`${model} ${replica.baseUrl}`} data-model={model} data-replica={replica.baseUrl}>
              <td>{model}</td>
              <td class="mono">{replica.baseUrl}</td>
              <td>
                <span class={`state ${replica.healthy ? "loaded" : "failed"}`} data-healthy={String(replica.healthy ?? false)} title={replica.lastError ?? undefined}>
                  {replica.healthy ? "healthy" : "ejected"}
                </span>
                {!replica.healthy && replica.ejectedUntil && <div class="muted small">back-off until {new Date(replica.ejectedUntil).toLocaleTimeString()}</div>}
              </td>
              <td class="num">{replica.weight ?? 1}</td>
              <td class="num">
                {replica.inFlight ?? 0}
                {replica.maxInFlight ? ` / ${replica.maxInFlight}` : ""}
              </td>
              <td class="num">{replica.requests ?? 0}</td>
              <td class="num">{replica.errors ?? 0}</td>
              <td class="num">{replica.lastLatencyMs == null ? "–" : `${Math.round(replica.lastLatencyMs)} ms`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
