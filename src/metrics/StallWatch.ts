/**
 * Notices when the event loop is held, and names what was running then.
 *
 * Every request, every token of every stream and every health check waits while one callback
 * holds the loop, so an operator wants to know when that happened and which request (or model
 * load) did it. A timer ticks every TICK_MS; a tick that comes more than the threshold late means
 * the loop was held that long. The activities (requests, model loads) that were running when it
 * was taken are the suspects. The loop cannot say which callback ran, so the watch lists them
 * newest first: a request mostly holds the loop while it is being prepared (its body parsed, its
 * prompt tokenized, its document read), rarely once its stream is flowing.
 */

/** How often the timer ticks. A tick costs microseconds; 20 a second is nothing beside a token. */
const TICK_MS = 50;
/** An activity is counted as arriving during a stall only if it began this long after the stall could have. */
const ARRIVAL_MARGIN_MS = 10;
/** Suspects a stall's log line details (all are counted). */
const MAX_LOGGED_SUSPECTS = 10;

/** What an activity says about itself when a stall is reported (read then, so a request's route is known). */
export type ActivityFields = Record<string, string | number | undefined>;

export interface StallSuspect extends ActivityFields {
  kind: string;
  /** How long the activity had been running when the stall ended (or when it ended, if sooner). */
  runningMs: number;
}

export interface Stall {
  /** How long the loop was busy past the tick, in milliseconds. */
  heldMs: number;
  /** Activities that were running when the loop was taken (or ended while it was held), newest first. */
  suspects: StallSuspect[];
  /**
   * Activities that began in the last `heldMs`: requests that arrived while the loop was busy. No
   * one of them held it from the start, but a burst of arrivals, each reading its body in the
   * same turn of the loop, is a stall of many short callbacks, and shows here.
   */
  startedDuring: number;
}

interface Activity {
  kind: string;
  startedAt: number;
  endedAt: number | undefined;
  describe: () => ActivityFields;
}

export interface StallWatchOptions {
  /** A tick this many milliseconds late is a stall. */
  thresholdMs: number;
  onStall: (stall: Stall) => void;
  now?: () => number;
}

export class StallWatch {
  private readonly running = new Set<Activity>();
  /** Activities that ended since the last tick: they may have been what held the loop. */
  private endedSinceTick: Activity[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastTick = 0;
  private readonly now: () => number;

  constructor(private readonly options: StallWatchOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  start(): this {
    if (this.timer) return this;
    this.lastTick = this.now();
    this.timer = setInterval(() => this.tick(), TICK_MS);
    // The watch never keeps a process alive on its own.
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.running.clear();
    this.endedSinceTick = [];
  }

  /**
   * Marks the start of something that may hold the loop (a request, a model load); call the
   * returned function when it ends (more than once is harmless). `describe` is read only if a
   * stall is reported while the activity runs.
   */
  begin(kind: string, describe: () => ActivityFields): () => void {
    if (!this.timer) return () => {};
    const activity: Activity = { kind, startedAt: this.now(), endedAt: undefined, describe };
    this.running.add(activity);
    return () => {
      if (activity.endedAt !== undefined || !this.running.delete(activity)) return;
      activity.endedAt = this.now();
      this.endedSinceTick.push(activity);
    };
  }

  /** Activities running now (for tests and diagnostics). */
  get activeCount(): number {
    return this.running.size;
  }

  private tick(): void {
    const now = this.now();
    const heldMs = now - this.lastTick - TICK_MS;
    this.lastTick = now;
    const ended = this.endedSinceTick;
    this.endedSinceTick = [];
    if (heldMs < this.options.thresholdMs) return;
    // Whatever took the loop was running before the last `heldMs` began (or began in the very
    // callback that held it, which then ran at least that long); what started since came after.
    // The margin keeps a suspect that began just as the loop was taken.
    const suspects: StallSuspect[] = [];
    let startedDuring = 0;
    for (const activity of [...this.running, ...ended]) {
      if (now - activity.startedAt < heldMs - ARRIVAL_MARGIN_MS) startedDuring++;
      else suspects.push({ ...activity.describe(), kind: activity.kind, runningMs: Math.round((activity.endedAt ?? now) - activity.startedAt) });
    }
    suspects.sort((a, b) => a.runningMs - b.runningMs);
    this.options.onStall({ heldMs: Math.round(heldMs), suspects, startedDuring });
  }
}

/**
 * A stall as its log line's fields: the newest suspects in detail (at most ten; `moreInFlight`
 * counts the rest), and every suspect counted by what it is (a request's route, a model load's
 * models), so a stall under many requests still shows what was running.
 */
export function stallLogFields({ heldMs, suspects, startedDuring }: Stall): Record<string, unknown> {
  const counts: Record<string, number> = {};
  for (const suspect of suspects) {
    const what = `${suspect.kind} ${suspect.route ?? suspect.models ?? ""}`.trim();
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return {
    heldMs,
    inFlight: suspects.slice(0, MAX_LOGGED_SUSPECTS),
    ...(suspects.length > MAX_LOGGED_SUSPECTS ? { moreInFlight: suspects.length - MAX_LOGGED_SUSPECTS, inFlightCounts: counts } : {}),
    ...(startedDuring ? { startedDuring } : {}),
  };
}
