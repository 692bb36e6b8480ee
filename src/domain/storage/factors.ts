import type { Tx } from './transactions';

/** An account's TOTP authenticator: its secret sealed with SECRET_KEY, active once confirmed. */
export interface StoredTotp {
  applicationId: number;
  entityId: number;
  /** The base32 secret, sealed (src/domain/second-factor.ts: bound to the account). */
  secretSealed: string;
  /** When a first code proved the authenticator holds the secret; null while enrolling. */
  confirmedAt: Date | null;
  /** The last time step a code was accepted for: a code of it or an earlier one is never accepted again. */
  lastStep: number | null;
  createdAt: Date;
}

/**
 * The second factors of accounts (docs/second-factor.md): one TOTP authenticator per account at
 * most. Every change is single under concurrency: a step is taken, a confirmation made, by one
 * conditional UPDATE each.
 */
export interface FactorStore {
  /**
   * What an account signs in with beside its password, in one statement (every sign-in asks):
   * whether it has a confirmed authenticator, and whether it has a passkey.
   */
  summary(applicationId: number, entityId: number): Promise<{ totp: boolean; passkeys: boolean }>;
  /** The account's authenticator, confirmed or not. */
  totp(applicationId: number, entityId: number, tx?: Tx): Promise<StoredTotp | undefined>;
  /**
   * Starts an enrollment with a new secret, replacing one not yet confirmed; false (nothing
   * written) when the account has a confirmed authenticator.
   */
  startTotp(applicationId: number, entityId: number, secretSealed: string, now: Date, tx: Tx): Promise<boolean>;
  /**
   * Confirms the enrollment of `secretSealed` (the secret the first code was checked against) with
   * that code's step; false when it was confirmed already, replaced by a new enrollment, or is gone.
   */
  confirmTotp(applicationId: number, entityId: number, secretSealed: string, step: number, now: Date, tx: Tx): Promise<boolean>;
  /**
   * Takes time step `step` of a confirmed authenticator: true for one caller only, and only when
   * no code of this step or a later one was accepted before (a code is never accepted twice).
   */
  takeTotpStep(applicationId: number, entityId: number, step: number, tx: Tx): Promise<boolean>;
  /** Removes the authenticator; false when there was none. */
  removeTotp(applicationId: number, entityId: number, tx: Tx): Promise<boolean>;
}

/** Where a passkey is kept: on one device only, or synced (and so backed up) by its provider. */
export type PasskeyDeviceType = 'singleDevice' | 'multiDevice';

/** An account's passkey (a WebAuthn credential): public data only. */
export interface StoredPasskey {
  id: number;
  applicationId: number;
  entityId: number;
  /** The credential's id as the authenticator made it (base64url). */
  credentialId: string;
  /** Its public key (COSE, base64url). */
  publicKey: string;
  /** The signature counter last seen (0: an authenticator that keeps none, as synced passkeys do). */
  counter: number;
  deviceType: PasskeyDeviceType;
  backedUp: boolean;
  /** How the browser may reach the authenticator (`internal`, `hybrid`, `usb`, …). */
  transports: string[];
  /** The authenticator model (all zeroes when it says none). */
  aaguid: string;
  /** The person's name for it. */
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** A passkey as registered: what the ceremony proved, and its name. */
export type NewPasskey = Omit<StoredPasskey, 'id' | 'lastUsedAt'>;

/**
 * The passkeys of accounts (docs/passkeys.md). A credential id belongs to one account; a use moves
 * the counter by one conditional UPDATE from the value it was checked against, so of two uses
 * racing with one signature counter, one passes.
 */
export interface PasskeyStore {
  /** The account's passkeys, oldest first. */
  list(applicationId: number, entityId: number, tx?: Tx): Promise<StoredPasskey[]>;
  /** The passkey of this credential id, whoever's it is. */
  byCredential(applicationId: number, credentialId: string, tx?: Tx): Promise<StoredPasskey | undefined>;
  /** Stores a new passkey: its id, or undefined when the credential id is registered already. */
  add(passkey: NewPasskey, tx: Tx): Promise<number | undefined>;
  /**
   * Records a use: the counter from `seen` (the value the signature was checked against) to
   * `counter`, the backup state now, and when, committed on its own (before the sign-in it proves);
   * false when another use moved it first.
   */
  useAlone(applicationId: number, id: number, seen: number, counter: number, backedUp: boolean, now: Date): Promise<boolean>;
  /** Names the account's passkey `id`; false when it has none of that id. */
  rename(applicationId: number, entityId: number, id: number, name: string, tx: Tx): Promise<boolean>;
  /** Removes the account's passkey `id`; false when it has none of that id. */
  remove(applicationId: number, entityId: number, id: number, tx: Tx): Promise<boolean>;
}
