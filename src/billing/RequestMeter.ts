import type { RequestContext } from "../http/requestContext.js";
import type { Cost, Credits, Hold } from "./credits.js";
import { microsToUnits, type CostLine } from "./money.js";

/**
 * The billing of one request's work on one model: reserve before inference, settle exactly
 * once after. The metered request (http/meteredRequest.ts) settles every meter again with
 * nothing in its `finally`: a no-op when the service already settled, else the hold's release
 * (the request failed before producing anything).
 */
export class RequestMeter {
  private hold: Hold | undefined;
  private cost: Cost | undefined;

  constructor(
    private readonly credits: Credits,
    private readonly ctx: RequestContext,
    private readonly model: string,
  ) {}

  reserve(maxLines: readonly CostLine[]): void {
    // Work that outlives its request (audio still decoding when its model was unloaded) must not
    // hold credit no settle will release: once settled, a meter holds nothing more.
    if (this.cost) throw new Error(`request ${this.ctx.requestId} has ended: its credit is settled, and nothing more is held for it`);
    const auth = this.ctx.auth;
    if (!auth) return;
    this.hold = this.credits.reserve({ requestId: this.ctx.requestId, accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines });
  }

  /** A 402 now, holding nothing, when the caller could not be held for `lines`: before work that comes ahead of the real reservation. */
  requireAffordable(lines: readonly CostLine[]): void {
    const auth = this.ctx.auth;
    if (auth) this.credits.checkReservable({ accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines: lines });
  }

  /**
   * The most units, 0 to `max` (a whole number), whose price `linesFor(units)` reserve() would
   * hold now, found by bisection on dry runs: work whose size shows only as it is done (audio,
   * as it decodes) stops where the caller could no longer pay for it. `max` when nobody is billed.
   */
  mostAffordable(max: number, linesFor: (units: number) => readonly CostLine[]): number {
    const auth = this.ctx.auth;
    if (!auth) return max;
    const affordable = (units: number) => this.credits.canReserve({ accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines: linesFor(units) });
    if (affordable(max)) return max;
    // Nothing costs nothing: `low` is always affordable and `high` never.
    let low = 0;
    let high = max;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (affordable(middle)) low = middle;
      else high = middle;
    }
    return low;
  }

  settle(lines: readonly CostLine[]): Cost {
    if (this.cost) return this.cost;
    this.cost = this.hold ? this.credits.settle(this.hold, lines, { model: this.model }).cost : { usd: 0, diem: 0 };
    return this.cost;
  }

  /** What the hold covers, as a cost: what settling every reserved line will charge. */
  reservedCost(): Cost {
    const funds = this.hold?.funds;
    return funds ? { usd: microsToUnits(funds.usd + funds.bundled), diem: microsToUnits(funds.diem) } : { usd: 0, diem: 0 };
  }

  get settledCost(): Cost | undefined {
    return this.cost;
  }
}
