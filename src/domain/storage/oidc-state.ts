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
  save(applicationId: number, object: OidcObjectWrite, tx?: Tx): Promise<void>;
  /**
   * Saves a new object, never replacing one: false when an object of that model and id exists
   * (a replay marker: of callers racing on any node with one id, one saves it).
   */
  saveNew(applicationId: number, object: OidcObjectWrite, tx?: Tx): Promise<boolean>;
  /** The object of `model` whose id hashes to `idHash`, spent or not, expired or not. */
  find(applicationId: number, model: string, idHash: string, tx?: Tx): Promise<StoredOidcObject | undefined>;
  /** The object of `model` whose uid hashes to `uidHash`. */
  findByUid(applicationId: number, model: string, uidHash: string): Promise<StoredOidcObject | undefined>;
  /** Marks the object spent: true for one caller only. */
  consume(applicationId: number, model: string, idHash: string, now: Date, tx?: Tx): Promise<boolean>;
  /** Deletes the object. */
  destroy(applicationId: number, model: string, idHash: string, tx?: Tx): Promise<void>;
  /** Deletes every object of a grant; answers how many. */
  destroyGrant(applicationId: number, grantId: string, tx?: Tx): Promise<number>;
  /** Deletes every object of a record (its sessions and grants end with its other sessions); answers how many. */
  destroyOfRecord(applicationId: number, entityId: number, tx: Tx): Promise<number>;
  /** Deletes up to `limit` objects that expired before `before`. */
  sweep(before: Date, limit: number): Promise<number>;
}
