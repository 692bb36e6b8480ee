import type { Tx } from './transactions';

/** What an erasure removed or cleared, by place (for the job's answer and the operator's report). */
export interface ErasureCounts {
  snapshots: number;
  outboxRows: number;
  events: number;
  failures: number;
  auditEntries: number;
  oidcState: number;
  credentials: number;
}

/**
 * Erasures (docs/lifecycle.md#erase): a record's personal data removed for good. What stays is a
 * tombstone with no personal data (the application, the record's id, when) and the erasure's own
 * event and audit entry.
 */
export interface ErasureStore {
  /** Keeps the tombstone in the caller's transaction; false when the record was erased already. */
  markErased(applicationId: number, entityId: number, at: Date, transaction: Tx): Promise<boolean>;
  /** When the record was erased, if it was. */
  erasedAt(applicationId: number, entityId: number): Promise<Date | undefined>;
  /**
   * Every value a record's history holds that names the person (its email addresses and usernames
   * in its snapshots, recorded or pending): what an erasure looks for outside its own rows.
   */
  namesInHistory(applicationId: number, entityId: number, transaction: Tx): Promise<string[]>;
  /**
   * Removes or clears what holds the record's data outside its row (which the caller deletes, with
   * what goes with it): its snapshots, its outbox rows (those of its events, those whose payload
   * holds one of `needles` as a JSON string), its events' and audit entries' facts, address and
   * user agent (its `account.erased` ones excepted), its counted failed sign-ins, the OpenID
   * provider's state of it, and credentials in flight that hold a needle (social sign-ins). The
   * outbox row `keep` (the erasure's own) stays. Idempotent: a second run finds nothing.
   */
  purge(applicationId: number, entityId: number, needles: readonly string[], keep: string, transaction: Tx): Promise<ErasureCounts>;
  /** `purge` committed on its own (the erasure's job). */
  purgeAlone(applicationId: number, entityId: number, needles: readonly string[], keep: string): Promise<ErasureCounts>;
}
