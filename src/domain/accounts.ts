import { addressChanged, emailChangeNotice, type NoticeContext } from './email-change';
import type { Outbox } from './ports';
import type { Storage } from './storage';
import type { CredentialKind } from './storage/credentials';
import type { UserRecord, RecordChange } from './storage/records';
import type { RecordVersions } from './versions';

// The actions on a user's account as a whole — a change from a profile form or a reset page, and
// what an operator does (the CLI's users:* commands, /entity.delete) — each one transaction, with
// the snapshot it commits.

/** What an account action writes with: the storage, the outbox its snapshot is committed to, and the clock. */
export interface AccountWrites { db: Storage; outbox: Outbox; versions: RecordVersions; now: () => Date }

/** What a new password ends: every session's tokens (an authorization code not yet exchanged stays). */
const PASSWORD_CHANGE_ENDS: CredentialKind[] = ['refresh_token', 'access_token', 'refresh_secret'];

/** What a change of the account may also need: the session it keeps, and what a change of its email address needs. */
export interface ChangeOptions {
  /** The family of the session that set a new password, which stays (null: every session ends). */
  keepSession?: string | null;
  /** Required for a change that may replace the email address: where the old address is told from (email-change.ts). */
  notice?: NoticeContext;
  /** The caller proved a recent sign-in (or is the application's own client): without it a change of the address is refused. */
  proven?: boolean;
}

/** A change of the email address made as the user without recent proof of a sign-in, found with the record locked. */
export class EmailChangeNeedsProofError extends Error {}

/**
 * Writes a change of a user's record (a profile form, a new password) in one transaction with its
 * snapshot: the record is locked and changed; a change that sets a password hash also ends every
 * session but `keepSession`. A change that replaces the email address (judged on the locked record)
 * needs `proven` (else EmailChangeNeedsProofError), leaves the address unverified and tells the old
 * address (`notice`).
 * Answers the record as committed, or undefined when it was deleted meanwhile (nothing written).
 * A taken email or username raises DuplicateAttributeError.
 */
export function changeAccount(
  deps: AccountWrites, applicationId: number, entityId: number, change: RecordChange, options: ChangeOptions = {},
): Promise<UserRecord | undefined> {
  return deps.outbox.commit(async (tx) => {
    const now = deps.now();
    const locked = await deps.db.records.findForUpdate(applicationId, entityId, tx);
    if (!locked) return { result: undefined, jobs: [] };
    const moved = addressChanged(locked.email, change.email);
    if (moved && !options.proven) throw new EmailChangeNeedsProofError(`record ${entityId}: a change of the email address needs proof of a recent sign-in`);
    if (moved && !options.notice) throw new Error('a change of the email address needs a notice context');
    const changed = await deps.db.records.update(locked, moved ? { ...change, emailVerified: null } : change, now, tx);
    if (change.passwordHash) await deps.db.credentials.revokeForRecord(applicationId, entityId, PASSWORD_CHANGE_ENDS, options.keepSession ?? null, now, tx);
    const notices = moved ? await emailChangeNotice(deps, tx, options.notice!, locked, changed, now) : [];
    return { result: changed, jobs: [(await deps.versions.written(changed, tx)).job, ...notices] };
  });
}

/**
 * Deletes a user record with its codes, tokens and identities, and commits its tombstone snapshot
 * in the same transaction (docs/versions.md). False when the record was gone already.
 */
export async function deleteUser(deps: AccountWrites, applicationId: number, entityId: number): Promise<boolean> {
  return deps.outbox.commit(async (tx) => {
    const locked = await deps.db.records.findForUpdate(applicationId, entityId, tx);
    if (!locked || !(await deps.db.records.remove(locked, tx))) return { result: false, jobs: [] };
    return { result: true, jobs: [deps.versions.deleted(locked, deps.now())] };
  });
}

/** Ends every session of a user: its access and refresh tokens, refresh secrets and unused authorization codes. Answers how many it spent. */
export function endSessions(db: Storage, applicationId: number, entityId: number, now: Date): Promise<number> {
  return db.credentials.revokeForRecord(applicationId, entityId, SESSION_KINDS, null, now);
}

/** What a user's sessions are made of: what ending them spends. */
export const SESSION_KINDS: CredentialKind[] = ['access_token', 'refresh_token', 'refresh_secret', 'authorization_code'];

/**
 * Disables a user: it cannot sign in, and every session ends (tokens, codes and verification links
 * spent); what a sign-in in flight issues does not work either (every grant refuses a disabled
 * user's access token, authorization code, refresh token and SDK session, and enabling spends them). Answers how many tokens and codes
 * it spent.
 */
export function disableUser(db: Storage, applicationId: number, entityId: number, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    await db.records.setDisabled(applicationId, entityId, now, tx);
    // its verification links too: nothing mailed before the disable works after it
    return db.credentials.revokeForRecord(applicationId, entityId, [...SESSION_KINDS, 'verification_code'], null, now, tx);
  });
}

/**
 * Enables a disabled user again: it may sign in. Its sessions stay ended: what a sign-in in flight
 * may have issued while it was being disabled (no access token of it worked meanwhile) is spent
 * with the change, so nothing from the disabled time comes back to life.
 */
export function enableUser(db: Storage, applicationId: number, entityId: number, now: Date): Promise<void> {
  return db.transaction(async (tx) => {
    await db.credentials.revokeForRecord(applicationId, entityId, SESSION_KINDS, null, now, tx);
    await db.records.setDisabled(applicationId, entityId, null, tx);
  });
}
