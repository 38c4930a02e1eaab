import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { countVideoFrames } from "../helpers/mediaProbe.js";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { databasePath, openStore } from "../../src/store/Store.js";
import { exited, hearth, hearthServe } from "../helpers/cli.js";
import { tinySdPath } from "../helpers/mediaModels.js";
import { retrieveUntilDone } from "../helpers/video.js";
import { countReservations } from "../../src/store/reservations.js";
import { getJob } from "../../src/store/jobs.js";

const dataDir = mkdtempSync(join(tmpdir(), "hearth-video-crash-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it("SIGKILL while a video is being generated: the job survives, runs again after restart, and is charged once", async () => {
  const registry = join(dataDir, "models.config.json");
  writeFileSync(
    registry,
    JSON.stringify({
      models: [
        {
          id: "tiny-video",
          type: "video",
          backend: "onnx-diffusion",
          file: tinySdPath(),
          image: { threads: 1, defaultSteps: 16, defaultCfgScale: 1 },
          video: { durations: ["3s"], resolutions: { "128p": 128 }, defaultResolution: "128p", fps: 8 },
          pricing: { per_second: { usd: 0.1, diem: 0.1 } },
        },
      ],
    }),
  );
  const created = await hearth(["keys", "create", "--name", "crash", "--usd", "1", "--data-dir", dataDir]);
  const key = created.stdout.trim().split("\n").at(-1)!;
  const args = ["--port", "0", "--data-dir", dataDir, "--config", registry];
  const call = (baseUrl: string, path: string, body: Record<string, unknown>) =>
    fetch(`${baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });

  const first = await hearthServe(args);
  const { queue_id } = (await (await call(first.baseUrl, "/video/queue", { model: "tiny-video", prompt: "a lighthouse in a storm", duration: "3s", seed: 11 })).json()) as {
    queue_id: string;
  };
  // Wait until frames are being made (past the model load), then kill the process outright.
  let status: { state?: string; progress?: number } = {};
  for (let i = 0; i < 600 && !(status.state === "RUNNING" && (status.progress ?? 0) > 0); i++) {
    await new Promise((r) => setTimeout(r, 20));
    status = (await (await call(first.baseUrl, "/video/retrieve", { model: "tiny-video", queue_id })).json()) as typeof status;
  }
  expect(status.state).toBe("RUNNING");
  expect(status.progress).toBeLessThan(0.9);
  first.child.kill("SIGKILL");
  expect(await exited(first.child)).toBe(null);

  const db = openStore(databasePath(dataDir));
  const job = getJob(db, queue_id)!;
  const account = job.accountId!;
  expect({ status: job.status, attempts: job.attempts }).toEqual({ status: "RUNNING", attempts: 1 });
  expect(getBalances(db, account).USD).toBe(1_000_000 - 300_000);
  db.close();

  const second = await hearthServe(args);
  try {
    const { video, states } = await retrieveUntilDone(() => call(second.baseUrl, "/video/retrieve", { model: "tiny-video", queue_id }), { intervalMs: 200 });
    expect(states.at(-1)).toBe("COMPLETED");
    expect(countVideoFrames(video)).toBe(24);
    const after = openStore(databasePath(dataDir));
    expect(getJob(after, queue_id)).toMatchObject({ status: "COMPLETED", attempts: 2 });
    // One charge, no refund: nothing lost, nothing taken twice; no hold left behind.
    expect(listLedgerEntries(after, { requestId: queue_id }).map(({ kind, deltaMicros }) => ({ kind, delta: deltaMicros }))).toEqual([{ kind: "charge", delta: -300_000 }]);
    expect(getBalances(after, account).USD).toBe(700_000);
    expect(ledgerTotals(after, account)).toEqual(getBalances(after, account));
    expect(countReservations(after)).toBe(0);
    after.close();
  } finally {
    second.child.kill("SIGTERM");
    await exited(second.child);
  }
}, 120_000);
