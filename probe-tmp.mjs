import { getLlama } from "node-llama-cpp";
const llama = await getLlama({ gpu: false, build: "never", progressLogs: false });
console.log("build", llama.buildType);
const model = await llama.loadModel({ modelPath: "/work/main/data/bench-models/qwen2.5-0.5b-shape-q8_0.gguf" });
const threads = Number(process.env.T ?? 2);
const ctx = await model.createContext({ sequences: 4, contextSize: 8192, threads, flashAttention: "auto" });
const raw = ctx._ctx;
const t = { decode: [], sample: [], wall: [] };
const wrap = (name, list) => { const orig = raw[name].bind(raw); return async (...a) => { const s = performance.now(); const r = await orig(...a); list.push(performance.now() - s); return r; }; };
const wrapped = { decodeBatch: wrap("decodeBatch", t.decode), sampleToken: wrap("sampleToken", t.sample) };
ctx._ctx = new Proxy(raw, { get: (target, prop) => wrapped[prop] ?? (typeof target[prop] === "function" ? target[prop].bind(target) : target[prop]) });
const seq = ctx.getSequence();
const prompt = model.tokenize("hello world ".repeat(78));
for (let round = 0; round < 3; round++) {
  t.decode.length = 0; t.sample.length = 0; t.wall.length = 0;
  await seq.clearHistory();
  let last = performance.now(); let n = 0;
  for await (const tok of seq.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    const now = performance.now(); if (n > 0) t.wall.push(now - last); last = now;
    if (++n >= 64) break;
  }
  const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)].toFixed(2); };
  console.log(`round ${round}: wall/token ${med(t.wall)} ms, decode ${med(t.decode.slice(1))} ms, sample ${med(t.sample)} ms, decodes ${t.decode.length}`);
}
process.exit(0);
