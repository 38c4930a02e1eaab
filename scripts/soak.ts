/**
 * `npm run soak [-- --rounds 60 --out FILE --snapshots DIR]`: what a node keeps once it has served.
 *
 * It starts `hearth serve` on the demo models with its inspector on loopback, then sends rounds
 * of a mixed, valid workload on every kind of engine (chats streamed, aborted mid-stream, with
 * tools, a schema, logprobs, several choices, reasoning and a picture; completions; stored
 * responses read back and deleted; embeddings; speech; transcription; image generation, upscale and
 * background removal; every fifth round a video job and a long-audio job to completion; billing
 * reads and CSV) plus a few refusals. After each round it collects the node's garbage through
 * the inspector and records the live heap, RSS, open file descriptors, threads and descendant
 * processes.
 *
 * Caches fill during the first rounds (compiled code, tokenized prompts, loaded models); after
 * that, a heap, a file count or a process count that keeps rising with the rounds is a leak. The
 * report gives the heap's growth per round over the second half (least squares). With
 * --snapshots, heap snapshots of the node after the first round, the middle one and the last are
 * written there, to compare in Chrome DevTools (Memory, "Comparison"). It asserts nothing: it is a
 * measurement.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { WebSocket } from "ws";
import { createKeys, startNode } from "./nodeUnderTest.js";

const log = (line: string) => process.stdout.write(`${line}\n`);
const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "60" },
    out: { type: "string", default: "bench-out/soak.json" },
    snapshots: { type: "string" },
    only: { type: "string" },
  },
});
const ROUNDS = Math.max(2, Number(args.rounds));

/** The workload's groups; `--only chat,speech` sends those alone, to tell which engines a growth follows. */
const WORKLOADS = ["chat", "vision", "embeddings", "speech", "transcription", "images", "jobs", "reads", "refusals"] as const;
type Workload = (typeof WORKLOADS)[number];
const only = args.only?.split(",").map((name) => name.trim());
const unknownWorkload = only?.find((name) => !(WORKLOADS as readonly string[]).includes(name));
if (unknownWorkload !== undefined) {
  process.stderr.write(`--only: no workload "${unknownWorkload}"; the workloads are ${WORKLOADS.join(", ")}\n`);
  process.exit(2);
}
const wants = (workload: Workload) => only === undefined || only.includes(workload);

/** A minimal DevTools-protocol client: enough to collect garbage, read the heap and take snapshots. */
class Inspector {
  private nextId = 0;
  private constructor(private readonly socket: WebSocket) {}

  static async connect(url: string): Promise<Inspector> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    return new Inspector(socket);
  }

  send<T = unknown>(method: string, params: object = {}): Promise<T> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const onMessage = (data: Buffer) => {
        const message = JSON.parse(data.toString()) as { id?: number; result?: T; error?: { message: string } };
        if (message.id !== id) return;
        this.socket.off("message", onMessage);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result as T);
      };
      this.socket.on("message", onMessage);
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** The live heap after two full collections (the second frees what finalizers of the first released). */
  async liveHeapBytes(): Promise<number> {
    await this.send("HeapProfiler.collectGarbage");
    await this.send("HeapProfiler.collectGarbage");
    return (await this.send<{ usedSize: number }>("Runtime.getHeapUsage")).usedSize;
  }

  async writeSnapshot(file: string): Promise<void> {
    const chunks: string[] = [];
    const onMessage = (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { method?: string; params?: { chunk: string } };
      if (message.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(message.params!.chunk);
    };
    this.socket.on("message", onMessage);
    try {
      await this.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    } finally {
      this.socket.off("message", onMessage);
    }
    writeFileSync(file, chunks.join(""));
  }

  close(): void {
    this.socket.close();
  }
}

interface ProcessCounts {
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  fds: number;
  threads: number;
  descendants: string[];
}

/** The process's resident memory, open descriptors, threads, and the processes below it (ffmpeg, the spawner). */
function processCounts(pid: number): ProcessCounts {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const children = new Map<number, { ppid: number; name: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (name) state ppid ...": the name may hold spaces and parentheses.
      const close = stat.lastIndexOf(")");
      children.set(Number(entry), { name: stat.slice(stat.indexOf("(") + 1, close), ppid: Number(stat.slice(close + 2).split(" ")[1]) });
    } catch {
      // Gone while listed.
    }
  }
  const descendants: string[] = [];
  const below = (parent: number) => {
    for (const [child, { ppid, name }] of children)
      if (ppid === parent) {
        descendants.push(name);
        below(child);
      }
  };
  below(pid);
  const mebibytes = (field: string) => Number((Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024).toFixed(1));
  return {
    rssMiB: mebibytes("VmRSS"),
    // Anonymous memory is what a leak grows; file-backed pages (libraries, mapped models) are the kernel's to drop.
    anonMiB: mebibytes("RssAnon"),
    fileMiB: mebibytes("RssFile"),
    fds: readdirSync(`/proc/${pid}/fd`).length,
    threads: readdirSync(`/proc/${pid}/task`).length,
    descendants: descendants.sort(),
  };
}

/**
 * Resident KiB per mapping, from /proc/PID/smaps: a file's path, `[heap]` (the main arena's brk
 * heap), `[stack]`, or `[anonymous]` for every unnamed mapping (V8's spaces, glibc's thread
 * arenas, native libraries' buffers).
 */
function residentByMapping(pid: number): Map<string, number> {
  const resident = new Map<string, number>();
  let name = "[anonymous]";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) name = header[1] || "[anonymous]";
    else if (line.startsWith("Rss:")) resident.set(name, (resident.get(name) ?? 0) + Number(/(\d+)/.exec(line)![1]));
  }
  return resident;
}

/** The mappings whose resident memory grew most between two readings, largest first. */
function largestGrowths(before: Map<string, number>, after: Map<string, number>, count: number): string[] {
  return [...after]
    .map(([name, kib]) => [name, kib - (before.get(name) ?? 0)] as const)
    .filter(([, grown]) => grown !== 0)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
    .slice(0, count)
    .map(([name, grown]) => `${grown > 0 ? "+" : ""}${(grown / 1024).toFixed(1)} MiB ${name}`);
}

/** A request from a chosen loopback address: refusals from a made-up key count against the address (abuse guard). */
function sendFrom(url: string, localAddress: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers, localAddress }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Least-squares slope of `values` against their index. */
function slope(values: number[]): number {
  const n = values.length;
  const meanX = (n - 1) / 2;
  const meanY = values.reduce((a, b) => a + b, 0) / n;
  let numerator = 0;
  let denominator = 0;
  values.forEach((y, x) => {
    numerator += (x - meanX) * (y - meanY);
    denominator += (x - meanX) ** 2;
  });
  return numerator / denominator;
}

const SYSTEM_PROMPT = `You are the assistant of a small workshop. ${"Answer briefly, name the tool you would use, and say when a question needs a person to look at the machine. ".repeat(4)}`;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-soak-"));
  log(`starting a node on the demo models in ${dataDir} (first start generates them)`);
  const node = await startNode(dataDir, 1000, { nodeArgs: ["--inspect=127.0.0.1:0"] });
  const pid = node.child.pid!;
  if (!node.inspectorUrl) throw new Error("the node did not open its inspector");
  const inspector = await Inspector.connect(node.inspectorUrl);
  // Ten accounts served in turn keep each under its per-minute limits; a separate key takes the refusals.
  const keys = createKeys(dataDir, 10, false, 1000);
  const [admin] = createKeys(dataDir, 1, true, 1000);
  const [refused] = createKeys(dataDir, 1, false, 1000);
  const base = node.baseUrl;
  const statuses: Record<string, Record<number, number>> = {};
  const count = (label: string, status: number) => {
    const byStatus = (statuses[label] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  };
  const call = async (label: string, path: string, init: { key: string; body?: unknown; method?: string; accept?: string; form?: FormData }) => {
    const headers: Record<string, string> = { authorization: `Bearer ${init.key}` };
    if (init.accept) headers.accept = init.accept;
    if (init.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? (init.body !== undefined || init.form ? "POST" : "GET"),
      headers,
      body: init.form ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    count(label, res.status);
    return { status: res.status, bytes, json: <T>() => JSON.parse(bytes.toString()) as T };
  };
  const chat = (body: object) => ({
    model: "hearth-tiny-chat",
    max_tokens: 24,
    ...body,
    messages: [{ role: "system", content: SYSTEM_PROMPT }, ...((body as { messages?: object[] }).messages ?? [])],
  });

  // Inputs made once by the node itself: a picture and a spoken sentence.
  const picture = (
    await call("setup", "/image/generate", {
      key: admin!,
      body: { model: "hearth-tiny-sd", prompt: "a lamp", width: 64, height: 64, steps: 2, format: "png", return_binary: true },
    })
  ).bytes;
  const speech = (
    await call("setup", "/audio/speech", { key: admin!, body: { model: "tts-kokoro", input: "Please check the lathe before noon.", voice: "af_heart", response_format: "wav" } })
  ).bytes;
  const pictureUrl = `data:image/png;base64,${picture.toString("base64")}`;

  const abortedStream = async (key: string, round: number) => {
    const controller = new AbortController();
    const res = await fetch(`${base}/chat/completions`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(chat({ stream: true, max_tokens: 200, messages: [{ role: "user", content: `Tell a long story, ${round}.` }] })),
    });
    count("chat, aborted stream", res.status);
    await res.body!.getReader().read();
    controller.abort();
  };
  const untilDone = async (label: string, path: string, key: string, body: object) => {
    for (let i = 0; i < 600; i++) {
      const res = await call(label, path, { key, body });
      if (res.status !== 200 || !res.bytes.subarray(0, 1).equals(Buffer.from("{"))) return res.status;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return 0;
  };

  /** Chat on the tiny GGUF models: streamed and not, abandoned, several choices, tools, a schema, reasoning, completions, stored responses. */
  const pushChats = (work: Promise<unknown>[], key: string, r: number) => {
    for (let i = 0; i < 8; i++)
      work.push(
        call("chat", "/chat/completions", {
          key,
          body: chat({
            stream: i % 2 === 0,
            logprobs: i % 4 === 1,
            top_logprobs: i % 4 === 1 ? 3 : undefined,
            messages: [{ role: "user", content: `Question ${r}.${i}: which file for brass?` }],
          }),
        }),
      );
    for (let i = 0; i < 3; i++) work.push(abortedStream(key, r));
    work.push(call("chat, two choices", "/chat/completions", { key, body: chat({ n: 2, messages: [{ role: "user", content: `Two ideas, ${r}.` }] }) }));
    work.push(
      call("chat, tools", "/chat/completions", {
        key,
        body: chat({
          tool_choice: "required",
          tools: [{ type: "function", function: { name: "find_tool", parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } } }],
          messages: [{ role: "user", content: `Find the file, ${r}.` }],
        }),
      }),
    );
    work.push(
      call("chat, schema", "/chat/completions", {
        key,
        body: chat({
          response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object", properties: { tool: { type: "string" } }, required: ["tool"] } } },
          messages: [{ role: "user", content: `As JSON, ${r}.` }],
        }),
      }),
    );
    work.push(
      call("chat, reasoning", "/chat/completions", {
        key,
        body: { model: "hearth-tiny-reasoning", stream: true, max_tokens: 32, messages: [{ role: "user", content: `Think about ${r}.` }] },
      }),
    );
    work.push(call("completions", "/completions", { key, body: { model: "hearth-tiny-chat", prompt: `Workshop log ${r}:`, max_tokens: 16 } }));
    work.push(
      call("responses", "/responses", { key, body: { model: "hearth-tiny-chat", input: `Summarise round ${r}.`, max_output_tokens: 16 } }).then(async (created) => {
        if (created.status !== 200) return;
        const { id } = created.json<{ id: string }>();
        await call("responses, read", `/responses/${id}`, { key });
        await call("responses, delete", `/responses/${id}`, { key, method: "DELETE" });
      }),
    );
  };

  const round = async (r: number) => {
    const key = keys[r % keys.length]!;
    const work: Promise<unknown>[] = [];
    if (wants("chat")) pushChats(work, key, r);
    if (wants("vision"))
      work.push(
        call("chat, picture", "/chat/completions", {
          key,
          body: {
            model: "hearth-tiny-vision",
            max_tokens: 8,
            messages: [
              {
                role: "user",
                content: [
                  { type: "text", text: `What is this, ${r}?` },
                  { type: "image_url", image_url: { url: pictureUrl } },
                ],
              },
            ],
          },
        }),
      );
    if (wants("embeddings"))
      for (let i = 0; i < 4; i++)
        work.push(
          call("embeddings", "/embeddings", { key, body: { model: i % 2 ? "hearth-tiny-embedding" : "hearth-tiny-embedding-gguf", input: [`part ${r}.${i}`, "a brass fitting"] } }),
        );
    if (wants("speech")) {
      work.push(call("speech, mp3", "/audio/speech", { key, body: { model: "tts-kokoro", input: `Round ${r} is done.`, voice: "af_heart", response_format: "mp3" } }));
      work.push(call("speech, wav", "/audio/speech", { key, body: { model: "tts-vits", input: `Round ${r} is done.`, response_format: "wav" } }));
    }
    if (wants("transcription")) {
      const form = new FormData();
      form.append("model", "hearth-tiny-whisper");
      form.append("file", new Blob([speech], { type: "audio/wav" }), "note.wav");
      work.push(call("transcription", "/audio/transcriptions", { key, form }));
    }
    if (wants("images")) {
      work.push(call("image", "/image/generate", { key, body: { model: "hearth-tiny-sd", prompt: `a lamp, ${r}`, width: 64, height: 64, steps: 2 } }));
      work.push(call("upscale", "/image/upscale", { key, body: { image: picture.toString("base64"), scale: 2 } }));
      work.push(call("background removal", "/image/background-remove", { key, body: { image: picture.toString("base64") } }));
    }
    if (wants("reads")) {
      work.push(call("balance", "/billing/balance", { key }));
      work.push(call("usage", "/billing/usage-history?limit=100", { key }));
      work.push(call("usage, CSV", "/billing/usage-history?limit=100", { key, accept: "text/csv" }));
      work.push(call("models", "/models?type=all", { key }));
      work.push(call("keys", "/api_keys", { key: admin! }));
    }
    if (wants("jobs") && r % 5 === 0) {
      work.push(
        call("video, queue", "/video/queue", { key, body: { model: "hearth-tiny-video", prompt: `a workshop, ${r}`, duration: "1s", seed: r } }).then(async (queued) => {
          if (queued.status !== 200) return;
          const { queue_id } = queued.json<{ queue_id: string }>();
          await untilDone("video, retrieve", "/video/retrieve", key, { model: "hearth-tiny-video", queue_id });
          await call("video, complete", "/video/complete", { key, body: { model: "hearth-tiny-video", queue_id } });
        }),
      );
      work.push(
        call("audio, queue", "/audio/queue", { key, body: { model: "tts-kokoro", prompt: `Round ${r}. ${SYSTEM_PROMPT}`, voice: "af_heart", response_format: "mp3" } }).then(
          async (queued) => {
            if (queued.status !== 200) return;
            const { queue_id } = queued.json<{ queue_id: string }>();
            await untilDone("audio, retrieve", "/audio/retrieve", key, { model: "tts-kokoro", queue_id });
            await call("audio, complete", "/audio/complete", { key, body: { model: "tts-kokoro", queue_id } });
          },
        ),
      );
    }
    // Refusals: made-up keys (from a different loopback address each round), broken JSON.
    if (wants("refusals")) {
      for (let i = 0; i < 2; i++)
        work.push(
          sendFrom(
            `${base}/chat/completions`,
            `127.0.0.${2 + ((r * 2 + i) % 250)}`,
            { authorization: `Bearer hth_made_up_${r}_${i}`, "content-type": "application/json" },
            "{}",
          ).then((status) => count("refused: unknown key", status)),
        );
      work.push(
        sendFrom(`${base}/chat/completions`, "127.0.0.1", { authorization: `Bearer ${refused}`, "content-type": "application/json" }, "{broken").then((status) =>
          count("refused: broken JSON", status),
        ),
      );
    }
    await Promise.all(work);
  };

  const samples: ({ round: number; seconds: number; heapMiB: number } & ProcessCounts)[] = [];
  const snapshotAt = new Set([1, Math.ceil(ROUNDS / 2), ROUNDS]);
  // Where resident memory sits at the start of the second half (caches filled) and at the end.
  const secondHalfFrom = Math.floor(ROUNDS / 2) + 1;
  let mappingsAtSecondHalf = new Map<string, number>();
  let mappingsAtEnd = new Map<string, number>();
  if (args.snapshots) mkdirSync(args.snapshots, { recursive: true });
  log(`${ROUNDS} rounds of ${only?.join(", ") ?? "every workload"}; after each: the node's live heap (collected), RSS, open fds, threads, processes below it`);
  try {
    for (let r = 1; r <= ROUNDS; r++) {
      const started = performance.now();
      await round(r);
      const seconds = (performance.now() - started) / 1000;
      // Let streams the client aborted wind down before measuring.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const heapMiB = (await inspector.liveHeapBytes()) / 2 ** 20;
      const counts = processCounts(pid);
      samples.push({ round: r, seconds: Number(seconds.toFixed(2)), heapMiB: Number(heapMiB.toFixed(2)), ...counts });
      log(
        `round ${String(r).padStart(3)}  ${seconds.toFixed(1).padStart(5)} s  heap ${heapMiB.toFixed(2).padStart(7)} MiB  rss ${String(counts.rssMiB).padStart(5)} MiB (anon ${counts.anonMiB}, file ${counts.fileMiB})  fds ${counts.fds}  threads ${counts.threads}  below: ${counts.descendants.join(", ") || "none"}`,
      );
      if (r === secondHalfFrom) mappingsAtSecondHalf = residentByMapping(pid);
      if (r === ROUNDS) mappingsAtEnd = residentByMapping(pid);
      if (args.snapshots && snapshotAt.has(r)) await inspector.writeSnapshot(join(args.snapshots, `round-${r}.heapsnapshot`));
    }
  } finally {
    inspector.close();
    node.child.kill();
  }
  const secondHalf = samples.slice(Math.floor(samples.length / 2));
  const growthKiB = slope(secondHalf.map((s) => s.heapMiB)) * 1024;
  const anonGrowthKiB = slope(secondHalf.map((s) => s.anonMiB)) * 1024;
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  const refusedStatuses = Object.entries(statuses).flatMap(([label, byStatus]) =>
    Object.entries(byStatus)
      .filter(([status]) => label !== "setup" && !label.startsWith("refused") && Number(status) >= 300)
      .map(([status, n]) => `${label} ${status} ×${n}`),
  );
  log("");
  log(
    `heap: ${first.heapMiB} MiB after round 1, ${secondHalf[0]!.heapMiB} at round ${secondHalf[0]!.round}, ${last.heapMiB} at round ${last.round}; growth over the second half ${growthKiB.toFixed(1)} KiB a round`,
  );
  log(
    `rss ${first.rssMiB} → ${last.rssMiB} MiB (anonymous ${first.anonMiB} → ${last.anonMiB}, over the second half ${anonGrowthKiB.toFixed(1)} KiB a round; file-backed ${first.fileMiB} → ${last.fileMiB}); fds ${first.fds} → ${last.fds}; threads ${first.threads} → ${last.threads}; below ${first.descendants.length} → ${last.descendants.length}`,
  );
  log(`resident memory that moved most over the second half, by mapping: ${largestGrowths(mappingsAtSecondHalf, mappingsAtEnd, 6).join("; ") || "none"}`);
  log(refusedStatuses.length ? `not served: ${refusedStatuses.join("; ")}` : "every workload request was served (2xx)");
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(
    args.out,
    JSON.stringify(
      {
        rounds: ROUNDS,
        workloads: only ?? WORKLOADS,
        growthKiBPerRoundSecondHalf: Number(growthKiB.toFixed(1)),
        anonymousGrowthKiBPerRoundSecondHalf: Number(anonGrowthKiB.toFixed(1)),
        statuses,
        samples,
      },
      null,
      2,
    ),
  );
  log(`written to ${args.out}`);
  rmSync(dataDir, { recursive: true, force: true });
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
