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
    const auth = this.ctx.auth;
    if (!auth) return;
    this.hold = this.credits.reserve({ requestId: this.ctx.requestId, accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines });
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
