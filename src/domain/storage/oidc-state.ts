import type { Tx } from './transactions';

/** One object the OpenID provider keeps (a session, an interaction, a grant, …), as stored: found by hashes, never by a value. */
export interface StoredOidcObject {
  model: string;
  payload: Record<string, unknown>;
  grantId: string | null;
  entityId: number | null;
  expiresAt: Date;
  consumedAt: Date | null;
}

/** A new or replaced object: its id's SHA-256, its uid's (when it has one), and what it holds. */
export interface OidcObjectWrite {
  model: string;
  idHash: string;
  uidHash: string | null;
  grantId: string | null;
  entityId: number | null;
  payload: Record<string, unknown>;
  expiresAt: Date;
}

/**
 * What the OpenID provider keeps besides codes and tokens (docs/openid-connect.md#storage): one
 * row per object of a model and application. A save replaces the object whole; a consume marks it
 * spent by one conditional UPDATE, so of callers racing for it one sees `true`.
 */
export interface OidcStateStore {
  /** Saves the object (a new one, or one replacing the object with that id). */
  save(applicationId: number, object: OidcObjectWrite, tx: Tx): Promise<void>;
  /** `save` committed on its own (an object saved with no event: a session, an interaction). */
  saveAlone(applicationId: number, object: OidcObjectWrite): Promise<void>;
  /**
   * Saves a new object, never replacing one: false when an object of that model and id exists
   * (a replay marker: of callers racing on any node with one id, one saves it). Commits on its own.
   */
  saveNewAlone(applicationId: number, object: OidcObjectWrite): Promise<boolean>;
  /** The object of `model` whose id hashes to `idHash`, spent or not, expired or not. */
  find(applicationId: number, model: string, idHash: string, tx?: Tx): Promise<StoredOidcObject | undefined>;
  /** The object of `model` whose uid hashes to `uidHash`. */
  findByUid(applicationId: number, model: string, uidHash: string): Promise<StoredOidcObject | undefined>;
  /** Marks the object spent, committed on its own: true for one caller only. */
  consumeAlone(applicationId: number, model: string, idHash: string, now: Date): Promise<boolean>;
  /** Deletes the object. */
  destroy(applicationId: number, model: string, idHash: string, tx: Tx): Promise<void>;
  /** `destroy` committed on its own. */
  destroyAlone(applicationId: number, model: string, idHash: string): Promise<void>;
  /** Deletes every object of a grant; answers how many. */
  destroyGrant(applicationId: number, grantId: string, tx: Tx): Promise<number>;
  /** `destroyGrant` committed on its own. */
  destroyGrantAlone(applicationId: number, grantId: string): Promise<number>;
  /** Deletes every object of a record (its sessions and grants end with its other sessions); answers how many. */
  destroyOfRecord(applicationId: number, entityId: number, tx: Tx): Promise<number>;
  /** The provider's live objects of `model` belonging to the record (its sessions not expired at `now`), read in the transaction that ends them. */
  listOfRecord(applicationId: number, model: string, entityId: number, now: Date, tx: Tx): Promise<StoredOidcObject[]>;
  /** Deletes up to `limit` objects that expired before `before`. */
  sweepAlone(before: Date, limit: number): Promise<number>;
}
