/**
 * Polls POST /video/retrieve (or /audio/retrieve) until the job completes; records the states it
 * passed through. The finished media is whatever answer is not JSON (`video` names it either way).
 */
export async function retrieveUntilDone(
  retrieve: () => Promise<Response>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<{ video: Buffer; contentType: string; states: string[]; progress: number[] }> {
  const states: string[] = [];
  const progress: number[] = [];
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const res = await retrieve();
    if (res.status !== 200) throw new Error(`retrieve answered ${res.status}: ${await res.text()}`);
    const contentType = res.headers.get("content-type") ?? "";
    if (!contentType.startsWith("application/json")) {
      states.push("COMPLETED");
      return { video: Buffer.from(await res.arrayBuffer()), contentType, states, progress };
    }
    const body = (await res.json()) as { status: string; state: string; progress: number };
    if (states.at(-1) !== body.state) states.push(body.state);
    progress.push(body.progress);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
  throw new Error(`the job did not complete in time (states: ${states.join(" -> ")})`);
}
