import type { KeptEvent } from '../events';
import type { Filter } from '../filter';
import type { NewCredential } from './credentials';
import type { OutboxJob } from './outbox';
import type { StoredProfile } from './social';
import type { Tx } from './transactions';

/** A user record as stored; `attributes` holds every attribute without a column of its own. */
export interface UserRecord {
  id: number;
  applicationId: number;
  typeName: string;
  uuid: string;
  email: string | null;
  username: string | null;
  passwordHash: string | null;
  emailVerified: Date | null;
  attributes: Record<string, unknown>;
  created: Date;
  lastUpdated: Date;
  /** How many committed changes the record has had (1 when created): its snapshots' order. */
  version: number;
  /**
   * How an operator disabled the user (no sign-in, no working token while `isDisabled`), or null.
   * A state of the account, not an attribute: no snapshot.
   */
  disabled: Disabled | null;
}

/** An operator's disable: since when, until when (null: until enabled), and why (the operator's words, shown to operators only). */
export interface Disabled { at: Date; until: Date | null; reason: string | null }

/** Whether the record is disabled at `now`: disabled, and its `until` (if any) not yet reached. */
export const isDisabled = (record: Pick<UserRecord, 'disabled'>, now: Date): boolean =>
  record.disabled !== null && (record.disabled.until === null || record.disabled.until > now);

/**
 * Whether a credential of the record issued at `issuedAt` is refused at `now`: the record is
 * disabled, or was when it was issued (a sign-in in flight around the disable; enabling spends
 * those, a disable's `until` passing does not).
 */
export const refusesCredential = (record: Pick<UserRecord, 'disabled'>, issuedAt: Date | undefined, now: Date): boolean =>
  isDisabled(record, now) || (record.disabled !== null && record.disabled.until !== null && issuedAt !== undefined
    && issuedAt >= record.disabled.at && issuedAt < record.disabled.until);

export type NewRecord = Omit<UserRecord, 'id' | 'created' | 'lastUpdated' | 'version' | 'disabled'>;

/** The unique attributes a record can be found by (docs/api.md#access-endpoints: `key_attribute`). */
export type RecordKey = { uuid: string } | { id: number } | { email: string } | { username: string };

export class DuplicateAttributeError extends Error {
  constructor(readonly attribute: 'email' | 'username' | 'uuid') {
    super(`${attribute} is already in use`);
  }
}

/** A write found the record changed since the state it was given was read (see `write`). */
export class StaleRecordError extends Error {}

/**
 * Emails and usernames as stored: Unicode NFC, so `josé` typed precomposed (é) or decomposed
 * (e + combining acute) is one and the same address.
 */
export const normalized = <T extends string | null | undefined>(value: T): T => (typeof value === 'string' ? value.normalize('NFC') as T : value);

/** The unique key of an email or username: NFC, then lower case, so case and composition never make a second account. */
export const uniqueKey = (value: string | null) => (value === null ? null : value.normalize('NFC').toLowerCase());

export type RecordChange = Partial<Pick<UserRecord, 'email' | 'username' | 'passwordHash' | 'emailVerified' | 'attributes'>>;

/**
 * A record's next state after `change` at `now`: one more version, and a lastUpdated never earlier
 * than the previous change's (pods' clocks may differ by a few milliseconds), so snapshots sort the
 * same by time as by version.
 */
export function nextState(read: UserRecord, change: RecordChange, now: Date): UserRecord {
  const given = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)) as RecordChange;
  return {
    ...read,
    ...given,
    email: given.email === undefined ? read.email : normalized(given.email),
    username: given.username === undefined ? read.username : normalized(given.username),
    lastUpdated: now > read.lastUpdated ? now : read.lastUpdated,
    version: read.version + 1,
  };
}

/** `change` with its attributes merged into the record's attribute set (what `update` writes). */
export const merged = (read: UserRecord, change: RecordChange): RecordChange =>
  ({ ...change, ...(change.attributes && { attributes: { ...read.attributes, ...change.attributes } }) });

/** The state `update` would write for `change` (for a write that does not go through it: signIn). */
export const updated = (read: UserRecord, change: RecordChange, now: Date) => nextState(read, merged(read, change), now);

/** The records of every application: the user accounts and what is stored with them. */
export interface RecordStore {
  /**
   * Inserts a record; a taken email, username or uuid raises DuplicateAttributeError (an address
   * reserved for another record's undo link is taken too, here and in every change).
   */
  insert(e: NewRecord, now: Date, transaction: Tx): Promise<UserRecord>;
  /**
   * Changes a record locked in this transaction (findForUpdate): `attributes` are merged into its
   * attribute set, the other parts replaced. A taken email or username raises
   * DuplicateAttributeError; a record changed since it was read, StaleRecordError. Answers the
   * record as it commits.
   */
  update(locked: UserRecord, change: RecordChange, now: Date, transaction: Tx): Promise<UserRecord>;
  /** Writes a record's whole client-written state; the password hash only when given. */
  replace(locked: UserRecord, next: Required<Omit<RecordChange, 'passwordHash'>> & Pick<RecordChange, 'passwordHash'>, now: Date, transaction: Tx): Promise<UserRecord>;
  /** A change of what belongs to the record without being a column of it (linked identities): a new version. */
  touch(locked: UserRecord, now: Date, transaction: Tx): Promise<UserRecord>;
  /**
   * Claims the account (its row of `account_claims`, written, never a new version): what a change
   * takes before counting rows of the account it does not write (its passkeys before one is
   * removed; its memberships, roles or invitations before one more), so that two such changes
   * never both pass. Written, not only locked: on a Galera cluster a row lock holds on its node
   * alone, while two transactions that write one row conflict on every node (the second runs
   * again, and counts the first's).
   */
  claim(entityId: number, now: Date, transaction: Tx): Promise<void>;
  /** Sets a time attribute of a locked record (emailVerified, lastLogin, or one of the flow's). */
  setTime(locked: UserRecord, attribute: string, at: Date, transaction: Tx): Promise<UserRecord>;
  /**
   * A sign-in's whole write, committed before it answers: `next` (updated(read, …): lastLogin,
   * and a rehashed password) if the record is still at the version `read` has, the sign-in's
   * credentials, its outbox rows (the new version's snapshot, and any other) and its events. False
   * when the record changed since `read`: nothing is written (the caller locks it and writes in a
   * transaction).
   */
  signInAlone(read: UserRecord, next: UserRecord, credentials: NewCredential[], jobs: OutboxJob[], events: readonly KeptEvent[], now: Date): Promise<boolean>;
  /** Scoped to the application: another application's record is never found. */
  find(applicationId: number, key: RecordKey, transaction?: Tx): Promise<UserRecord | undefined>;
  /** `find` by email or username with the record's identities, read together. */
  findWithProfiles(applicationId: number, key: { email: string } | { username: string }): Promise<{
    record: UserRecord; profiles: StoredProfile[];
    /** What it signs in with beside a password (FactorStore.summary), read in the same statement. */
    factors: { totp: boolean; passkeys: boolean };
  } | undefined>;
  /**
   * The ids of the records matching `filter` (all without one), one page sorted by `sortOn`
   * (attribute names, `-` first for descending), with the bytes of each one's stored attributes.
   * Storage compiles both for its engine: FilterUseError for what they cannot use (a password, a
   * timestamp that is not one). The database stops it after `timeoutMs`.
   */
  searchPage(
    applicationId: number, filter: Filter | undefined, sortOn: readonly string[],
    page: { limit: number; offset: number }, timeoutMs: number,
  ): Promise<{ id: number; bytes: number }[]>;
  /**
   * Whether a search could use this filter or this sort, checked as `searchPage` compiles them and
   * without running anything: FilterUseError when not. Lets a caller refuse them in the order it
   * reads its input.
   */
  checkSearch(part: { filter: Filter } | { sortOn: readonly string[] }): void;
  /** The records with these ids, in the order of `ids` (one deleted meanwhile is left out). */
  findByIds(applicationId: number, ids: number[]): Promise<UserRecord[]>;
  /**
   * How many records match `filter` (all without one); the database stops it after `timeoutMs`.
   * With `cap`, it stops counting past `cap` (answering `cap + 1`): a bounded count for a page.
   */
  count(applicationId: number, filter: Filter | undefined, timeoutMs: number, cap?: number): Promise<number>;
  /**
   * How many of the application's records have a password hash of each format (PASSWORD_FORMATS,
   * by prefix; `other`, and `none` for no password): one scan of the application's records.
   */
  countPasswordFormats(applicationId: number): Promise<Record<string, number>>;
  /** The record, locked until the transaction ends. */
  findForUpdate(applicationId: number, id: number, transaction: Tx): Promise<UserRecord | undefined>;
  /** Disables a user (how: when, until when, why) or enables it again (null): a state of the account, not a new version. */
  setDisabled(applicationId: number, id: number, disabled: Disabled | null, transaction: Tx): Promise<void>;
  /** Deletes a record; its credentials and linked identities go with it. */
  remove(record: UserRecord, transaction: Tx): Promise<boolean>;
}
