import { useEffect, useState } from "preact/hooks";
import { amount, apiJson, errorText, when } from "../api.ts";

interface Account {
  id: string;
  name: string;
  kind: string;
  createdAt: string;
  balances: { USD: number; DIEM: number; BUNDLED_CREDITS: number };
  stakedDiem: number;
  keys: { active: number; total: number };
}

/** Every account on the node with its balances; admins grant credit here. */
export function AccountsPage() {
  const [accounts, setAccounts] = useState<Account[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [grant, setGrant] = useState({ account: "", currency: "USD", amount: "", note: "" });

  const load = () =>
    apiJson<{ data: Account[] }>("/admin/accounts")
      .then((r) => {
        setAccounts(r.data);
        setGrant((g) => (g.account || !r.data[0] ? g : { ...g, account: r.data[0].id }));
      })
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    void load();
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setNotice(null);
    try {
      const body = { currency: grant.currency, amount: Number(grant.amount), ...(grant.note.trim() ? { note: grant.note.trim() } : {}) };
      const res = await apiJson<{ data: Account }>(`/admin/accounts/${encodeURIComponent(grant.account)}/credits`, { method: "POST", body: JSON.stringify(body) });
      await load();
      setNotice(`Granted ${grant.amount} ${grant.currency} to ${res.data.name}.`);
      setGrant({ ...grant, amount: "", note: "" });
    } catch (e) {
      setError(errorText(e));
    }
  };
  const set = (field: keyof typeof grant) => (e: Event) => setGrant({ ...grant, [field]: (e.currentTarget as HTMLInputElement).value });

  return (
    <>
      <section class="card">
        <h2>Grant credits</h2>
        <form class="row" onSubmit={submit} id="grant">
          <label>
            Account
            <select name="account" value={grant.account} onChange={set("account")}>
              {accounts?.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name} ({a.id.slice(0, 8)})
                </option>
              ))}
            </select>
          </label>
          <label>
            Currency
            <select name="currency" value={grant.currency} onChange={set("currency")}>
              <option value="USD">USD</option>
              <option value="DIEM">DIEM</option>
              <option value="BUNDLED_CREDITS">bundled credits</option>
            </select>
          </label>
          <label>
            Amount
            <input name="amount" type="number" min="0" step="any" required value={grant.amount} onInput={set("amount")} />
          </label>
          <label class="grow">
            Note
            <input name="note" maxLength={200} value={grant.note} onInput={set("note")} placeholder="optional" />
          </label>
          <button type="submit" disabled={!grant.account}>
            Grant
          </button>
        </form>
        {notice && <p class="ok">{notice}</p>}
      </section>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <section>
        {!accounts ? (
          <p class="muted">Loading…</p>
        ) : (
          <table class="grid" id="accounts">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Id</th>
                <th class="num">USD</th>
                <th class="num">Bundled</th>
                <th class="num">DIEM</th>
                <th class="num">Staked DIEM</th>
                <th class="num">Keys</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {accounts.map((a) => (
                <tr key={a.id} data-account={a.id}>
                  <td>{a.name}</td>
                  <td>{a.kind}</td>
                  <td class="mono">{a.id.slice(0, 8)}</td>
                  <td class="num" data-usd>
                    {amount(a.balances.USD)}
                  </td>
                  <td class="num">{amount(a.balances.BUNDLED_CREDITS)}</td>
                  <td class="num">{amount(a.balances.DIEM)}</td>
                  <td class="num">{amount(a.stakedDiem)}</td>
                  <td class="num">
                    {a.keys.active}
                    {a.keys.total > a.keys.active ? ` (+${a.keys.total - a.keys.active} revoked/expired)` : ""}
                  </td>
                  <td>{when(a.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
