import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { apiJson, forgetKey, storedKey } from "./api.ts";
import { useLive } from "./live.ts";
import { AccountsPage } from "./pages/Accounts.tsx";
import { KeysPage } from "./pages/Keys.tsx";
import { LoginPage } from "./pages/Login.tsx";
import { ModelsPage } from "./pages/Models.tsx";
import { PlaygroundPage } from "./pages/Playground.tsx";
import { UsagePage } from "./pages/Usage.tsx";
import type { PageProps } from "./pages/types.ts";
import "./styles.css";
import type { JSX } from "preact";

/** `operatorOnly`: node-wide pages, shown to the node operator's key only (the server refuses the rest anyway). */
const PAGES: Record<"models" | "keys" | "accounts" | "usage" | "playground", { title: string; Page: (props: PageProps) => JSX.Element; operatorOnly: boolean }> = {
  models: { title: "Models", Page: ModelsPage, operatorOnly: true },
  keys: { title: "Keys", Page: KeysPage, operatorOnly: false },
  accounts: { title: "Accounts", Page: AccountsPage, operatorOnly: true },
  usage: { title: "Usage", Page: UsagePage, operatorOnly: true },
  playground: { title: "Playground", Page: PlaygroundPage, operatorOnly: false },
};
type PageName = keyof typeof PAGES;

const pagesFor = (operator: boolean) => (Object.keys(PAGES) as PageName[]).filter((name) => operator || !PAGES[name].operatorOnly);

/** Hash routes (#/models): the server never needs to know the console's pages. */
function currentPage(operator: boolean): PageName {
  const name = location.hash.replace(/^#\/?/, "") as PageName;
  const allowed = pagesFor(operator);
  return allowed.includes(name) ? name : allowed[0]!;
}

function useHashPage(operator: boolean): PageName {
  const [page, setPage] = useState(() => currentPage(operator));
  useEffect(() => {
    const onChange = () => setPage(currentPage(operator));
    onChange();
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, [operator]);
  return page;
}

/**
 * Whether the key is the node operator's, from its own row in its account's key list (the key
 * ends with the row's last six characters). Only what is shown depends on it: the server
 * refuses an account admin the node-wide endpoints either way.
 */
function useOperator(apiKey: string): boolean | null {
  const [operator, setOperator] = useState<boolean | null>(null);
  useEffect(() => {
    apiJson<{ data: { isOperator: boolean; last6Chars: string }[] }>("/api_keys?include=service_fields", { key: apiKey }).then(
      (keys) => setOperator(keys.data.some((k) => k.isOperator && apiKey.endsWith(k.last6Chars))),
      () => setOperator(false),
    );
  }, [apiKey]);
  return operator;
}

function Console({ apiKey, onLogout }: { apiKey: string; onLogout: () => void }) {
  const operator = useOperator(apiKey);
  if (operator === null) return <p class="muted">Loading…</p>;
  return <ConsoleShell apiKey={apiKey} operator={operator} onLogout={onLogout} />;
}

function ConsoleShell({ apiKey, operator, onLogout }: { apiKey: string; operator: boolean; onLogout: () => void }) {
  const page = useHashPage(operator);
  const live = useLive(apiKey, operator);
  const { title, Page } = PAGES[page];
  useEffect(() => {
    document.title = `${title} · Hearth console`;
  }, [title]);
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Hearth</span>
        <nav>
          {pagesFor(operator).map((name) => (
            <a key={name} href={`#/${name}`} class={name === page ? "active" : ""} data-page={name}>
              {PAGES[name].title}
            </a>
          ))}
        </nav>
        {operator ? (
          <span class={`live-dot ${live.status}`} title={`live view: ${live.status}`} data-live={live.status}>
            {live.status}
          </span>
        ) : (
          <span class="muted small" data-role="account-admin" title="An account admin key manages its own account's keys; the node-wide pages are the operator's.">
            account admin
          </span>
        )}
        <button type="button" class="link" onClick={onLogout}>
          Log out
        </button>
      </header>
      <main>
        <h1>{title}</h1>
        <Page live={live} operator={operator} />
      </main>
    </div>
  );
}

function App() {
  const [apiKey, setApiKey] = useState(storedKey());
  if (!apiKey) return <LoginPage onLogin={setApiKey} />;
  return (
    <Console
      apiKey={apiKey}
      onLogout={() => {
        forgetKey();
        setApiKey(null);
      }}
    />
  );
}

render(<App />, document.getElementById("app")!);
