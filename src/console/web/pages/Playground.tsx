import { useEffect, useRef, useState } from "preact/hooks";
import { apiFetch, apiJson, errorText } from "../api.ts";
import { sseData } from "../sse.ts";

interface ModelInfo {
  id: string;
  model_spec?: { voices?: string[] };
}

function useModels(type: string): ModelInfo[] | null {
  const [models, setModels] = useState<ModelInfo[] | null>(null);
  useEffect(() => {
    apiJson<{ data: ModelInfo[] }>(`/models?type=${type}`)
      .then((r) => setModels(r.data))
      .catch(() => setModels([]));
  }, [type]);
  return models;
}

function ModelSelect({ models, value, onChange }: { models: ModelInfo[]; value: string; onChange: (id: string) => void }) {
  return (
    <label>
      Model
      <select name="model" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {m.id}
          </option>
        ))}
      </select>
    </label>
  );
}

interface Message {
  role: "user" | "assistant";
  content: string;
}

/** Chat streamed over SSE: the reply grows as chunks arrive. */
function Chat() {
  const models = useModels("text");
  const [model, setModel] = useState("");
  const [messages, setMessages] = useState<Message[]>([]);
  const [input, setInput] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [stats, setStats] = useState<{ firstMs: number | null; chunks: number; totalMs: number | null } | null>(null);
  const abort = useRef<AbortController | null>(null);
  useEffect(() => {
    if (!model && models?.[0]) setModel(models[0].id);
  }, [models]);
  if (!models) return <p class="muted">Loading models…</p>;
  if (models.length === 0) return <p class="muted">No text model is configured.</p>;

  const send = async (event: Event) => {
    event.preventDefault();
    const text = input.trim();
    if (!text || busy) return;
    const history: Message[] = [...messages, { role: "user", content: text }];
    setMessages([...history, { role: "assistant", content: "" }]);
    setInput("");
    setBusy(true);
    setError(null);
    const started = performance.now();
    let firstMs: number | null = null;
    let chunks = 0;
    let reply = "";
    setStats({ firstMs, chunks, totalMs: null });
    abort.current = new AbortController();
    try {
      const res = await apiFetch("/chat/completions", {
        method: "POST",
        body: JSON.stringify({ model, messages: history, stream: true, max_tokens: 256 }),
        signal: abort.current.signal,
      });
      for await (const data of sseData(res.body!)) {
        const chunk = JSON.parse(data) as { error?: string | { message?: string }; choices?: { delta?: { content?: string | null } }[] };
        if (chunk.error) throw new Error(typeof chunk.error === "string" ? chunk.error : (chunk.error.message ?? "stream error"));
        const delta = chunk.choices?.[0]?.delta?.content ?? "";
        if (!delta) continue;
        chunks++;
        firstMs ??= Math.round(performance.now() - started);
        reply += delta;
        setMessages([...history, { role: "assistant", content: reply }]);
        setStats({ firstMs, chunks, totalMs: null });
      }
      setStats({ firstMs, chunks, totalMs: Math.round(performance.now() - started) });
    } catch (e) {
      if (!abort.current?.signal.aborted) setError(errorText(e));
    } finally {
      setBusy(false);
      abort.current = null;
    }
  };

  return (
    <div class="chat">
      <div class="row">
        <ModelSelect models={models} value={model} onChange={setModel} />
        <button type="button" class="small link" onClick={() => setMessages([])} disabled={busy}>
          Clear
        </button>
      </div>
      <div class="messages" id="messages">
        {messages.map((m, i) => (
          <div key={i} class={`message ${m.role}`} data-role={m.role}>
            {m.content || (busy && i === messages.length - 1 ? "…" : "")}
          </div>
        ))}
      </div>
      {stats && (
        <p class="muted small" id="chat-stats" data-chunks={stats.chunks} data-done={stats.totalMs !== null ? "true" : "false"}>
          {stats.chunks} chunks{stats.firstMs !== null ? ` · first token ${stats.firstMs} ms` : ""}
          {stats.totalMs !== null ? ` · done in ${stats.totalMs} ms` : ""}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form class="row" onSubmit={send} id="chat-form">
        <input class="grow" name="prompt" value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder="Say something…" autoComplete="off" />
        {busy ? (
          <button type="button" onClick={() => abort.current?.abort()}>
            Stop
          </button>
        ) : (
          <button type="submit" disabled={!input.trim()}>
            Send
          </button>
        )}
      </form>
    </div>
  );
}

/** Text to speech, played in an <audio> element. */
function Speech() {
  const models = useModels("tts");
  const [model, setModel] = useState("");
  const [voice, setVoice] = useState("");
  const [text, setText] = useState("Hello from Hearth.");
  const [audio, setAudio] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!model && models?.[0]) setModel(models[0].id);
  }, [models]);
  const voices = models?.find((m) => m.id === model)?.model_spec?.voices ?? [];
  useEffect(() => {
    if (!voices.includes(voice)) setVoice(voices[0] ?? "");
  }, [model, models]);
  useEffect(() => () => void (audio && URL.revokeObjectURL(audio)), [audio]);
  if (!models) return <p class="muted">Loading models…</p>;
  if (models.length === 0) return <p class="muted">No speech model is configured.</p>;
  const speak = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await apiFetch("/audio/speech", { method: "POST", body: JSON.stringify({ model, input: text, ...(voice ? { voice } : {}), response_format: "wav" }) });
      setAudio(URL.createObjectURL(await res.blob()));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack" onSubmit={speak} id="speech-form">
      <div class="row">
        <ModelSelect models={models} value={model} onChange={setModel} />
        {voices.length > 0 && (
          <label>
            Voice
            <select name="voice" value={voice} onChange={(e) => setVoice(e.currentTarget.value)}>
              {voices.map((v) => (
                <option key={v}>{v}</option>
              ))}
            </select>
          </label>
        )}
      </div>
      <textarea name="input" rows={3} maxLength={4096} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <div class="row">
        <button type="submit" disabled={busy || !text.trim()}>
          {busy ? "Synthesising…" : "Speak"}
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {/* biome-ignore lint/a11y/useMediaCaption: the audio speaks the text typed just above it, which is its caption */}
      {audio && <audio id="speech-audio" controls src={audio} />}
    </form>
  );
}

/** Text to image, shown as an <img>. */
function Images() {
  const models = useModels("image");
  const [model, setModel] = useState("");
  const [prompt, setPrompt] = useState("a lighthouse at dusk");
  const [image, setImage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!model && models?.[0]) setModel(models[0].id);
  }, [models]);
  if (!models) return <p class="muted">Loading models…</p>;
  if (models.length === 0) return <p class="muted">No image model is configured.</p>;
  const generate = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await apiJson<{ data: { b64_json?: string; url?: string }[] }>("/images/generations", {
        method: "POST",
        body: JSON.stringify({ model, prompt, response_format: "b64_json" }),
      });
      const first = res.data[0];
      setImage(first?.b64_json ? `data:image/png;base64,${first.b64_json}` : (first?.url ?? null));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack" onSubmit={generate} id="image-form">
      <div class="row">
        <ModelSelect models={models} value={model} onChange={setModel} />
      </div>
      <textarea name="prompt" rows={2} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      <div class="row">
        <button type="submit" disabled={busy || !prompt.trim()}>
          {busy ? "Generating…" : "Generate"}
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {image && <img id="generated-image" class="generated" src={image} alt={prompt} />}
    </form>
  );
}

const TABS = { chat: { title: "Chat", Tab: Chat }, speech: { title: "Speech", Tab: Speech }, images: { title: "Images", Tab: Images } } as const;

export function PlaygroundPage() {
  const [tab, setTab] = useState<keyof typeof TABS>("chat");
  const { Tab } = TABS[tab];
  return (
    <>
      <div class="tabs" role="tablist">
        {(Object.keys(TABS) as (keyof typeof TABS)[]).map((name) => (
          <button type="button" key={name} role="tab" aria-selected={name === tab} class={name === tab ? "active" : ""} onClick={() => setTab(name)} data-tab={name}>
            {TABS[name].title}
          </button>
        ))}
      </div>
      <section class="card">
        <Tab />
      </section>
    </>
  );
}
