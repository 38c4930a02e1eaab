import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { forgetKey, storedKey } from "./api.ts";
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

const PAGES: Record<"models" | "keys" | "accounts" | "usage" | "playground", { title: string; Page: (props: PageProps) => JSX.Element }> = {
  models: { title: "Models", Page: ModelsPage },
  keys: { title: "Keys", Page: KeysPage },
  accounts: { title: "Accounts", Page: AccountsPage },
  usage: { title: "Usage", Page: UsagePage },
  playground: { title: "Playground", Page: PlaygroundPage },
};
type PageName = keyof typeof PAGES;

/** Hash routes (#/models): the server never needs to know the console's pages. */
function currentPage(): PageName {
  const name = location.hash.replace(/^#\/?/, "");
  return name in PAGES ? (name as PageName) : "models";
}

function useHashPage(): PageName {
  const [page, setPage] = useState(currentPage);
  useEffect(() => {
    const onChange = () => setPage(currentPage());
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return page;
}

function Console({ apiKey, onLogout }: { apiKey: string; onLogout: () => void }) {
  const page = useHashPage();
  const live = useLive(apiKey);
  const { title, Page } = PAGES[page];
  useEffect(() => {
    document.title = `${title} · Hearth console`;
  }, [title]);
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Hearth</span>
        <nav>
          {(Object.keys(PAGES) as PageName[]).map((name) => (
            <a key={name} href={`#/${name}`} class={name === page ? "active" : ""} data-page={name}>
              {PAGES[name].title}
            </a>
          ))}
        </nav>
        <span class={`live-dot ${live.status}`} title={`live view: ${live.status}`} data-live={live.status}>
          {live.status}
        </span>
        <button class="link" onClick={onLogout}>
          Log out
        </button>
      </header>
      <main>
        <h1>{title}</h1>
        <Page live={live} />
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
