import { useState } from "preact/hooks";
import { ApiError, apiFetch, errorText, storeKey } from "../api.ts";

/** Paste an admin key; it is checked against an admin-only endpoint before it is kept (sessionStorage: gone with the tab). */
export function LoginPage({ onLogin }: { onLogin: (key: string) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) return;
    setBusy(true);
    setError(null);
    try {
      await apiFetch("/api_keys", { key: trimmed });
      storeKey(trimmed);
      onLogin(trimmed);
    } catch (e) {
      setError(e instanceof ApiError && e.status === 403 ? "This is an inference key: the console needs an admin key." : errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login">
      <form class="card" onSubmit={submit}>
        <h1>Hearth console</h1>
        <p class="muted">
          Paste an admin API key: the operator key (<code>npx hearth keys create --name me --operator</code>) sees the whole node; an account admin key manages its own account's
          keys. It is kept in this tab only.
        </p>
        <label>
          Admin API key
          {/* biome-ignore lint/a11y/noAutofocus: the login page has one field, and typing the key is all there is to do */}
          <input type="password" name="key" autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} placeholder="hth_…" autoFocus />
        </label>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? "Checking…" : "Log in"}
        </button>
      </form>
    </div>
  );
}
