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
  takeTotpStep(applicationId: number, entityId: number, step: number, tx?: Tx): Promise<boolean>;
  /** Removes the authenticator; false when there was none. */
  removeTotp(applicationId: number, entityId: number, tx: Tx): Promise<boolean>;
}
