import type { EventOf, KeptEvent } from '../events';
import type { Tx } from './transactions';

export type CredentialKind = 'access_token' | 'refresh_token' | 'authorization_code' | 'creation_token' | 'verification_code'
  /** A social login token (40 characters) and the profile behind it. */
  | 'social_token'
  /** A social sign-in between the redirect to the provider and its callback (`state`). */
  | 'social_state'
  /**
   * A mobile SDK's refresh secret (sealed) for the session of one access token, found by that
   * token's hash: /oauth/refresh_access_token replaces the token while the session lives.
   */
  | 'refresh_secret'
  /** The old address's way back from a change of the email address (its previous value in `extra`). */
  | 'email_change_undo'
  /** An address held for the record that may take it back (value_hash: reservationHash): no other record takes it meanwhile. */
  | 'email_reservation'
  /** One of an account's recovery codes: signs in once in place of the second factor. */
  | 'recovery_code'
  /** A sign-in whose first credential was proven, waiting for its second factor (5 minutes, one use; what it resumes sealed in `extra`). */
  | 'mfa_token'
  /**
   * A code mailed for a sign-in (docs/email-codes.md): found by the hash of its code_token, the
   * code and the address sealed in `extra`, the address's keyed digest as `family` (a new code ends
   * the earlier ones), 10 minutes, one use.
   */
  | 'email_code'
  /**
   * A solved proof-of-work challenge (docs/proof-of-work.md), stored spent when it is used: found by
   * the SHA-256 of its signature, so a second use finds it; swept with the other spent rows.
   */
  | 'pow_challenge'
  /** A passkey ceremony's challenge (5 minutes, one use): its account and purpose in the row, `extra.ceremony`. */
  | 'passkey_challenge'
  /**
   * A sign-in whose application requires a second factor the account has not added: it adds one
   * with this (5 minutes, the enrollment endpoints only, until it has one), then signs in again.
   */
  | 'enroll_token'
  /**
   * A signed-in browser of the account page (docs/account-page.md): the value lives in an HttpOnly
   * cookie, the row holds the proof of its sign-in (`extra`) and when it was last seen; it ends after
   * a time idle, at its expiry, or when signed out, and spends like the account's other sessions.
   */
  | 'browser_session'
  /**
   * A signed-in browser of the operators' console (docs/console.md): a browser session of the
   * operators' application, kept apart so that the account page's cookie never opens the console.
   */
  | 'console_session'
  /**
   * The OpenID provider's codes and tokens (docs/openid-connect.md#storage): found by the SHA-256
   * of their value, their payload in `extra`, their grant as `family`, spent once like the others.
   */
  | 'oidc_code' | 'oidc_access_token' | 'oidc_refresh_token' | 'oidc_client_token'
  /**
   * The device authorization grant (docs/openid-connect.md#devices): the device's code, found by the
   * SHA-256 of its value and spent once like a code; and its user code, found by the SHA-256 of the
   * code as the provider normalizes it, its device code's value sealed to the application in `extra`.
   */
  | 'oidc_device_code' | 'oidc_user_code';

/** A credential that replaces a spent one: its hash and expiry. */
export interface Successor { valueHash: string; expiresAt: Date }

/** A code or token as stored: only the SHA-256 of its value, never the value. */
export interface StoredCredential {
  id: number;
  /** The SHA-256 of its value (hex). */
  valueHash: string;
  applicationId: number;
  kind: CredentialKind;
  entityId: number | null;
  /** The client that issued it. */
  clientId: number | null;
  /** The client it was issued for (null: the issuer itself). */
  forClientId: number | null;
  redirectUri: string | null;
  extra: Record<string, unknown> | null;
  family: string | null;
  expiresAt: Date;
  usedAt: Date | null;
  /** When it was issued (as read from the store; a new row is issued now). */
  createdAt?: Date;
}

export type NewCredential = Omit<StoredCredential, 'id' | 'usedAt' | 'createdAt'> & { valueHash: string };

/** The client a credential belongs to: the one it was issued for, else its issuer (null: none). */
export const ownerOf = (c: Pick<StoredCredential, 'forClientId' | 'clientId'>) => c.forClientId ?? c.clientId;

/** Codes and tokens: issued, found by the hash of their value, spent once. */
export interface CredentialStore {
  /** Inserts credentials (one statement: it is on every sign-in and token path). */
  insert(rows: NewCredential[], now: Date, transaction: Tx): Promise<void>;
  /**
   * Writes one credential by one statement: inserted, or when its hash is stored already, given
   * this `extra`, and this record and family where they are given (a token saved again, a device
   * code confirmed). Never a second row for one hash, even under concurrency.
   */
  save(row: NewCredential, now: Date, transaction: Tx): Promise<void>;
  /** `save` as a statement that commits on its own (a write that is this statement only, as an OpenID token's save with no event). */
  saveAlone(row: NewCredential, now: Date): Promise<void>;
  /**
   * Spends a live credential of `kind` with `event`, committed before it answers (one call of a
   * stored procedure where there are procedures): true for one caller only; false writes nothing.
   */
  consumeWithEventAlone(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, event: KeptEvent): Promise<boolean>;
  /** The credential with this hash in this application, spent or not. */
  find(applicationId: number, kind: CredentialKind, valueHash: string, transaction?: Tx): Promise<StoredCredential | undefined>;
  /** A live credential of `kind` with this hash (neither spent nor expired; nothing of a disabled user is live). */
  findActive(applicationId: number, kind: CredentialKind, valueHash: string, now: Date): Promise<StoredCredential | undefined>;
  /** Replaces the `extra` of a live credential; false when it is spent, expired or unknown. */
  setExtra(applicationId: number, kind: CredentialKind, valueHash: string, extra: Record<string, unknown>, now: Date, transaction: Tx): Promise<boolean>;
  /**
   * The one way to spend a one-time credential: under concurrency exactly one caller sees `true`.
   * `ownerClientId`: a client id spends only what belongs to that client (issued for it, or by it
   * for itself); null only what was issued for no client in particular; undefined whatever it is.
   */
  consume(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, transaction: Tx, ownerClientId?: number | null): Promise<boolean>;
  /**
   * Inserts `row` spent already, unless a row with its hash exists: true for the first caller only,
   * under concurrency too (the unique hash). One statement, committed on its own.
   */
  insertSpentAlone(row: NewCredential, now: Date): Promise<boolean>;
  /** `consume` as a statement that commits on its own (a spend with nothing else to write). */
  consumeAlone(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, ownerClientId?: number | null): Promise<boolean>;
  /**
   * The refresh grant: spends the presented refresh token (live, and the client's own) and inserts
   * its successor access and refresh tokens in its record and family, with `event` (whose account,
   * as actor and subject, is the spent token's record), committed before it answers. False when
   * nothing was spent.
   */
  rotateAlone(applicationId: number, spentHash: string, ownerClientId: number, successors: { access: Successor; refresh: Successor }, now: Date, event: RotationEvent): Promise<boolean>;
  /** Spends a record's live tokens of `kinds`, except those of one family (the caller's session). */
  revokeForRecord(applicationId: number, entityId: number, kinds: CredentialKind[], exceptFamily: string | null, now: Date, transaction: Tx): Promise<number>;
  /** A record's live credentials of `kind` (a few: its undo links). */
  liveOfRecord(applicationId: number, entityId: number, kind: CredentialKind, now: Date, transaction?: Tx): Promise<StoredCredential[]>;
  /** Holds `valueHash` (of `kind`) for a record until `expiresAt`, in place of any earlier row with that hash. */
  reserve(applicationId: number, kind: CredentialKind, valueHash: string, entityId: number, expiresAt: Date, now: Date, transaction: Tx): Promise<void>;
  /** The record a family's credentials belong to (null for a client's own): who a grant or session was given to. */
  ownerOfFamily(applicationId: number, family: string, transaction?: Tx): Promise<number | null>;
  /** Spends every live credential of a family; run it in a READ COMMITTED transaction. */
  revokeFamily(applicationId: number, family: string, now: Date, transaction: Tx): Promise<number>;
  /** Deletes up to `limit` rows that expired, or were spent, before `before`. */
  sweepAlone(before: Date, limit: number): Promise<number>;
}

/** A rotation's event before the rotation found whose token it spent: the store makes the spent token's record its actor and subject. */
export type RotationEvent = Omit<EventOf<'token.refreshed'>, 'actor' | 'subject' | 'carried'> & { clientId: string };
