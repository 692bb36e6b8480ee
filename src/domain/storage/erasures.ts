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
  webhookDeliveries: number;
  /** The logout tokens sent to its apps (those still being sent are kept until they are: docs/openid-connect.md#back-channel-logout). */
  logoutDeliveries: number;
  /** Its memberships of organizations, and the invitations to its addresses (or that it accepted). */
  organizationRows: number;
}

/**
 * What names a person outside its record's rows, by kind: each is looked for in the member that
 * holds that kind (an address in a mail's `to`, a uuid in the OpenID state's `accountId`, an
 * identity's `identifier`), never anywhere in a document.
 */
export interface ErasureNeedles { emails: string[]; uuids: string[]; identifiers: string[] }

/**
 * Erasures (docs/lifecycle.md#erase): a record's personal data removed for good. What stays is a
 * tombstone with no personal data (the application, the record's id, when) and the erasure's own
 * event and audit entry.
 */
export interface ErasureStore {
  /**
   * Keeps the tombstone in the caller's transaction, with a keyed digest of the record's uuid
   * (never the uuid); false when the record was erased already.
   */
  markErased(applicationId: number, entityId: number, at: Date, uuidDigest: string | null, transaction: Tx): Promise<boolean>;
  /** When the record was erased, if it was. */
  erasedAt(applicationId: number, entityId: number): Promise<Date | undefined>;
  /** The record erased whose uuid has this keyed digest, if one was. */
  erasedByUuid(applicationId: number, uuidDigest: string): Promise<number | undefined>;
  /**
   * Makes what the database's files hold follow what it commits (after an erasure): on SQLite, the
   * write-ahead log checkpointed and truncated, so the erased rows' pages (zeroed as they are freed:
   * secure_delete) are all the file keeps. Nothing to do on MySQL (docs/lifecycle.md#erase says what
   * its logs keep and how to purge them). Answers whether the files are clean now (false: a reader
   * held the log; the job tries again).
   */
  scrubFilesAlone(): Promise<boolean>;
  /**
   * What a record's history (its snapshots, recorded or pending) holds that names the person: the
   * addresses it had, its uuid, the identities it linked. What an erasure looks for outside its rows.
   */
  namesInHistory(applicationId: number, entityId: number, transaction: Tx): Promise<ErasureNeedles>;
  /**
   * Removes or clears what holds the record's data outside its row (which the caller deletes, with
   * what goes with it): its snapshots, its outbox rows (its snapshots, the jobs of its events,
   * emails to its addresses), its events' and audit entries' facts, address and user agent (its
   * `account.erased` ones excepted), its counted failed sign-ins, the OpenID provider's state of
   * it, and social sign-ins in flight that carry its identity or address. The outbox row `keep`
   * (the erasure's own) stays. Idempotent: a second run finds nothing.
   */
  purge(applicationId: number, entityId: number, needles: ErasureNeedles, keep: string, transaction: Tx): Promise<ErasureCounts>;
  /** `purge` committed on its own (the erasure's job). */
  purgeAlone(applicationId: number, entityId: number, needles: ErasureNeedles, keep: string): Promise<ErasureCounts>;
}
