/**
 * Keeps the sequences generating on one context in lock step, so every one of them rides in
 * every decode call.
 *
 * Why it is needed: node-llama-cpp decodes queued tokens in a loop that, right after a decode,
 * starts the next one with whatever has been queued again by then. Sampling results reach the
 * sequences one by one, and the last sequence to get its token always re-queues a few microtasks
 * after the loop has already looked: with four sequences generating, one misses every batch and
 * rides alone in the next (a third more decode calls; docs/bench.md). A sequence that has its
 * token waits here until every generating sequence has its own, and they are released together in
 * a later macrotask, after the loop has found the queue empty and stopped; their next tokens then
 * arrive in one turn of the event loop and node-llama-cpp decodes them as one batch.
 *
 * Members still waiting for their token from node-llama-cpp (decoding, sampling) are waited for
 * up to two step times: their result is on its way, and going without them would split the step
 * in two; a sampler slower than that (a heavy grammar) no longer sets everyone's pace. A member
 * that has its token but has not arrived (a consumer doing other work) holds the others back for
 * at most a short deadline, a fraction of the measured step time: then the ones waiting go on
 * without it and it joins the next step.
 */
export interface StepBarrierOptions {
  /** The deadline is this fraction of the recent step time (the time between two releases). */
  deadlineFraction: number;
  minDeadlineMs: number;
  maxDeadlineMs: number;
  /**
   * How long the others wait for a member still decoding or sampling, in recent step times
   * (bounded by engineMaxWaitMs): a sequence whose sampling is slow (a heavy grammar) slows its
   * neighbours to at most this, never to its own pace.
   */
  engineWaitSteps: number;
  engineMaxWaitMs: number;
  /**
   * Whether a step's output (detokenized text on its way to the client) waits until the next
   * step's decode is under way, so that the two overlap: right where the decode does not need the
   * core the JavaScript thread runs on (a GPU, or a CPU with cores to spare); where every core runs
   * a llama.cpp thread, work beside a decode delays it by more than its own time.
   */
  overlapOutput: boolean;
}

export const DEFAULT_STEP_BARRIER: StepBarrierOptions = {
  deadlineFraction: 0.25,
  minDeadlineMs: 1,
  maxDeadlineMs: 25,
  engineWaitSteps: 2,
  engineMaxWaitMs: 2000,
  overlapOutput: false,
};

/**
 * Whether a step's output should overlap the next decode (StepBarrierOptions.overlapOutput): when
 * the whole model is on a GPU, or llama.cpp's threads leave a core for the JavaScript thread. On
 * the 2-core machine, with one llama.cpp thread (a tiny model, four streams), overlapping served
 * 1.2-1.3x the tokens; with both cores decoding it changed nothing measurable (docs/bench.md).
 */
export function overlapsOutputWithDecode(decode: { gpuLayers: number; totalLayers: number; threads: number; cores: number }): boolean {
  const wholeModelOnGpu = decode.gpuLayers > 0 && decode.gpuLayers >= decode.totalLayers;
  return wholeModelOnGpu || decode.threads < decode.cores;
}

/** Weight of the newest step in the step-time average. */
const STEP_AVERAGE_WEIGHT = 0.2;

export interface StepBarrierStats {
  /** Steps released because every generating sequence had arrived. */
  fullSteps: number;
  /** Steps released by the deadline, with some generating sequence missing. */
  deadlineSteps: number;
  /** The deadline now in force, in milliseconds. */
  deadlineMs: number;
  /** Whether a step's output goes to the clients while the next step decodes (overlapsOutputWithDecode). */
  overlapOutput: boolean;
}

export class StepBarrier {
  private members = 0;
  /** Members between asking node-llama-cpp for their next token and getting it. */
  private inEngine = 0;
  private waiting: Array<() => void> = [];
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** Which wait the running timer bounds: a member busy in JavaScript, or one still in the engine. */
  private deadlineKind: "consumer" | "engine" | undefined;
  private releaseScheduled = false;
  private lastReleaseAt: number | undefined;
  private stepMs: number | undefined;
  private fullSteps = 0;
  private deadlineSteps = 0;
  private afterStepStarts: Array<() => void> = [];

  private readonly options: StepBarrierOptions;

  constructor(options: Partial<StepBarrierOptions> = {}) {
    this.options = { ...DEFAULT_STEP_BARRIER, ...options };
  }

  /**
   * node-llama-cpp's decode dispatch. A lone generating sequence is decoded within the same turn
   * of the event loop that queued its token, before that token's output (its SSE write) runs,
   * which would otherwise sit between two decodes. In every other case the dispatch waits for a
   * later macrotask, as node-llama-cpp's own "nextCycle" does: with several generating, so that
   * the tokens the barrier released together ride in one batch; with none, so that prompts
   * queued in the same turn are decoded together.
   */
  readonly dispatchSchedule = (dispatch: () => void): void => {
    if (this.members === 1) queueMicrotask(dispatch);
    else setImmediate(dispatch);
  };

  /** Decided once the context exists (overlapsOutputWithDecode). */
  setOverlapOutput(overlap: boolean): void {
    this.options.overlapOutput = overlap;
  }

  /** Whether a member's output waits for the next step's decode to start (afterNextStepStarts). */
  holdsOutput(): boolean {
    return this.options.overlapOutput && this.members > 1;
  }

  /**
   * Runs `fn` once the next step's decode has been handed to llama.cpp: two macrotasks after the
   * release, as the release resolves the members (their tokens are queued in its microtasks), the
   * dispatch runs in the next macrotask (dispatchSchedule), and its microtasks start the decode.
   * If node-llama-cpp's own loop takes the tokens instead (it was still busy), the decode has
   * started by then all the same.
   */
  afterNextStepStarts(fn: () => void): void {
    this.afterStepStarts.push(fn);
  }

  /** A sequence got its first token and now generates one token per step. */
  join(): void {
    this.members++;
  }

  /** A member finished (or failed): the others no longer wait for it. */
  leave(): void {
    this.members--;
    // An idle pause is not a step: the next step time is measured afresh.
    if (this.members === 0) this.lastReleaseAt = undefined;
    this.releaseIfAllArrived();
  }

  /**
   * A member has its token and wants the next: resolves when every member has arrived, or when
   * every member has its token and the deadline for the ones still busy with it has passed. With
   * others to wait for it resolves in a later macrotask than the last arrival, so node-llama-cpp's
   * decode loop has stopped before anyone queues again; a lone member goes on at once.
   */
  arrive(): Promise<void> {
    if (this.members <= 1 && this.waiting.length === 0) {
      // Alone, there is no step to share: go on at once, without a trip through the event loop.
      this.fullSteps++;
      // Output held while others were generating still waits for this step's decode.
      this.scheduleHeldOutputs();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.releaseIfAllArrived();
    });
  }

  /** Runs a member's request for its next token (counted as in the engine until it settles). */
  async inEngineWhile<T>(next: Promise<T>): Promise<T> {
    this.inEngine++;
    try {
      return await next;
    } finally {
      this.inEngine--;
      this.releaseIfAllArrived();
    }
  }

  stats(): StepBarrierStats {
    return { fullSteps: this.fullSteps, deadlineSteps: this.deadlineSteps, deadlineMs: this.deadlineMs(), overlapOutput: this.options.overlapOutput };
  }

  private deadlineMs(): number {
    const { deadlineFraction, minDeadlineMs, maxDeadlineMs } = this.options;
    if (this.stepMs === undefined) return maxDeadlineMs;
    return Math.min(maxDeadlineMs, Math.max(minDeadlineMs, this.stepMs * deadlineFraction));
  }

  private releaseIfAllArrived(): void {
    if (this.waiting.length === 0 || this.releaseScheduled) return;
    if (this.waiting.length >= this.members) {
      this.releaseScheduled = true;
      this.clearDeadline();
      setImmediate(() => this.release("full"));
      return;
    }
    // Every member has its token when none is in the engine: the missing ones are busy with it in
    // JavaScript and get the short deadline; otherwise the long one bounds a slow decode or sampler.
    const kind = this.inEngine === 0 ? "consumer" : "engine";
    if (this.deadlineKind === kind) return;
    this.clearDeadline();
    this.deadlineKind = kind;
    this.deadlineTimer = setTimeout(() => this.release("deadline"), kind === "consumer" ? this.deadlineMs() : this.engineWaitMs());
  }

  private engineWaitMs(): number {
    const { engineWaitSteps, engineMaxWaitMs } = this.options;
    return this.stepMs === undefined ? engineMaxWaitMs : Math.min(engineMaxWaitMs, Math.max(this.options.maxDeadlineMs, this.stepMs * engineWaitSteps));
  }

  private clearDeadline(): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.deadlineKind = undefined;
  }

  private release(reason: "full" | "deadline"): void {
    this.clearDeadline();
    this.releaseScheduled = false;
    const released = this.waiting;
    if (released.length === 0) return;
    this.waiting = [];
    if (reason === "full") this.fullSteps++;
    else this.deadlineSteps++;
    const now = performance.now();
    if (this.lastReleaseAt !== undefined) {
      const step = now - this.lastReleaseAt;
      this.stepMs = this.stepMs === undefined ? step : this.stepMs + STEP_AVERAGE_WEIGHT * (step - this.stepMs);
    }
    this.lastReleaseAt = now;
    for (const resolve of released) resolve();
    this.scheduleHeldOutputs();
  }

  private scheduleHeldOutputs(): void {
    if (this.afterStepStarts.length === 0) return;
    const outputs = this.afterStepStarts;
    this.afterStepStarts = [];
    setImmediate(() =>
      setImmediate(() => {
        for (const output of outputs) output();
      }),
    );
  }
}
