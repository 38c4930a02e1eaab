/** Polls POST /video/retrieve until the job completes; records the states it passed through. */
export async function retrieveUntilDone(
  retrieve: () => Promise<Response>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<{ video: Buffer; states: string[]; progress: number[] }> {
  const states: string[] = [];
  const progress: number[] = [];
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const res = await retrieve();
    if (res.status !== 200) throw new Error(`retrieve answered ${res.status}: ${await res.text()}`);
    if (res.headers.get("content-type")?.startsWith("video/mp4")) {
      states.push("COMPLETED");
      return { video: Buffer.from(await res.arrayBuffer()), states, progress };
    }
    const body = (await res.json()) as { status: string; state: string; progress: number };
    if (states.at(-1) !== body.state) states.push(body.state);
    progress.push(body.progress);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
  throw new Error(`the video did not complete in time (states: ${states.join(" -> ")})`);
}
