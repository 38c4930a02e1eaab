/** A payment that verified offline but could not be settled on its chain. */
export class SettlementError extends Error {
  override name = "SettlementError";
  constructor(
    /** transfer_simulation_failed | transfer_submission_failed | transfer_failed | settlement_pending | ... */
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}
