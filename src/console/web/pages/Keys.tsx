import { useEffect, useState } from "preact/hooks";
import { amount, apiFetch, apiJson, errorText, storedKey, when } from "../api.ts";
import type { PageProps } from "./types.ts";

interface ApiKey {
  id: string;
  apiKeyType: "ADMIN" | "INFERENCE";
  description: string;
  consumptionLimits?: { usd: number | null; diem: number | null };
  limitPeriod?: string;
  createdAt: string | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  last6Chars: string;
  isOperator: boolean;
  isGateway?: boolean;
}

const typeText = (k: ApiKey) => (k.isOperator ? "operator" : k.apiKeyType === "ADMIN" ? "admin" : k.isGateway ? "gateway" : "inference");

const limitText = (k: ApiKey) => {
  const parts = [
    k.consumptionLimits?.usd != null ? `$${amount(k.consumptionLimits.usd)}` : "",
    k.consumptionLimits?.diem != null ? `${amount(k.consumptionLimits.diem)} DIEM` : "",
  ].filter(Boolean);
  return parts.length ? `${parts.join(" + ")} / ${k.limitPeriod?.toLowerCase() ?? "epoch"}` : "none";
};

/**
 * The keys of the admin key's own account (the keys API is account-scoped). Operator keys are
 * marked; an account admin cannot revoke one, so no button is offered.
 */
export function KeysPage({ operator }: PageProps) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ id: string; secret: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [form, setForm] = useState({ description: "", type: "INFERENCE", usd: "", diem: "", period: "EPOCH", expiresAt: "" });

  const load = () =>
    apiJson<{ data: ApiKey[] }>("/api_keys?include=service_fields")
      .then((r) => setKeys(r.data))
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    void load();
  }, []);

  const create = async (event: Event) => {
    event.preventDefault();
    setError(null);
    const limit = { ...(form.usd ? { usd: Number(form.usd) } : {}), ...(form.diem ? { diem: Number(form.diem) } : {}) };
    const body = {
      description: form.description.trim(),
      apiKeyType: form.type,
      ...(Object.keys(limit).length ? { consumptionLimit: limit, limitPeriod: form.period } : {}),
      ...(form.expiresAt ? { expiresAt: form.expiresAt } : {}),
    };
    try {
      const res = await apiJson<{ data: { id: string; apiKey: string } }>("/api_keys", { method: "POST", body: JSON.stringify(body) });
      setCreated({ id: res.data.id, secret: res.data.apiKey });
      setForm({ ...form, description: "", usd: "", diem: "", expiresAt: "" });
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const revoke = async (id: string) => {
    setConfirming(null);
    setError(null);
    try {
      await apiFetch(`/api_keys?id=${encodeURIComponent(id)}`, { method: "DELETE" });
      if (created?.id === id) setCreated(null);
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const set = (field: keyof typeof form) => (e: Event) => setForm({ ...form, [field]: (e.currentTarget as HTMLInputElement).value });

  return (
    <>
      <section class="card">
        <h2>Create a key</h2>
        <form class="row" onSubmit={create} id="create-key">
          <label>
            Name
            <input name="description" required maxLength={64} value={form.description} onInput={set("description")} />
          </label>
          <label>
            Type
            <select name="type" value={form.type} onChange={set("type")}>
              <option value="INFERENCE">inference</option>
              <option value="ADMIN">admin</option>
            </select>
          </label>
          <label>
            USD limit
            <input name="usd" type="number" min="0" step="any" value={form.usd} onInput={set("usd")} placeholder="none" />
          </label>
          <label>
            DIEM limit
            <input name="diem" type="number" min="0" step="any" value={form.diem} onInput={set("diem")} placeholder="none" />
          </label>
          <label>
            Per
            <select name="period" value={form.period} onChange={set("period")}>
              <option value="EPOCH">day (epoch)</option>
              <option value="MONTH">month</option>
              <option value="LIFETIME">lifetime</option>
            </select>
          </label>
          <label>
            Expires
            <input name="expiresAt" type="date" value={form.expiresAt} onInput={set("expiresAt")} />
          </label>
          <button type="submit">Create</button>
        </form>
        {created && (
          <div class="secret" id="new-secret">
            <p>
              <strong>Copy the secret now:</strong> it is not shown again.
            </p>
            <code>{created.secret}</code>
            <button type="button" class="small" onClick={() => void navigator.clipboard?.writeText(created.secret)}>
              Copy
            </button>
            <button type="button" class="small link" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        )}
      </section>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <section>
        {!keys ? (
          <p class="muted">Loading…</p>
        ) : (
          <table class="grid" id="keys">
            <thead>
              <tr>
                <th>Name</th>
                <th>Type</th>
                <th>Key</th>
                <th>Limit</th>
                <th>Created</th>
                <th>Last used</th>
                <th>Expires</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>
                    {k.description}
                    {storedKey()?.endsWith(k.last6Chars) && <span class="muted small"> (this session)</span>}
                  </td>
                  <td data-key-type={typeText(k)}>{typeText(k)}</td>
                  <td class="mono">…{k.last6Chars}</td>
                  <td>{limitText(k)}</td>
                  <td>{when(k.createdAt)}</td>
                  <td>{when(k.lastUsedAt)}</td>
                  <td>{when(k.expiresAt)}</td>
                  <td class="actions">
                    {k.isOperator && !operator ? (
                      <span class="muted small">the operator's</span>
                    ) : confirming === k.id ? (
                      <>
                        <button type="button" class="small danger" onClick={() => void revoke(k.id)}>
                          Confirm revoke
                        </button>
                        <button type="button" class="small link" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </>
                    ) : (
                      <button type="button" class="small" onClick={() => setConfirming(k.id)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
