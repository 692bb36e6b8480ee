import { addressChanged, emailChangeNotice, type NoticeContext } from './email-change';
import { event, recordSubject, type Acting } from './events';
import type { UnitOfWork } from './ports';
import type { Storage, Tx } from './storage';
import type { CredentialKind } from './storage/credentials';
import type { UserRecord, RecordChange } from './storage/records';
import type { RecordVersions } from './versions';
import type { Clock } from './clients';

// Changes of a user's account as a whole — from a profile form, a reset page, the record API or
// an operator — written through the unit of work of the use case that makes them, with the events
// that say what happened (the record's snapshot carried by its record.* event).

/** What an account change writes with: the storage, the snapshots of records, and the clock (the services have all three). */
export interface AccountWrites { db: Storage; versions: RecordVersions; clock: Clock }

/** What a new password ends: every session's tokens (an authorization code not yet exchanged stays). */
/** A sign-in paused for its second factor (mfa_token) ends too: the password it proved is no longer the account's. */
const PASSWORD_CHANGE_ENDS: CredentialKind[] = ['refresh_token', 'access_token', 'refresh_secret', 'mfa_token', 'browser_session', 'oidc_access_token', 'oidc_refresh_token'];

/** What a change of the account may also need: the session it keeps, and what a change of its email address needs. */
export interface ChangeOptions {
  /** The family of the session that set a new password, which stays (null: every session ends). */
  keepSession?: string | null;
  /** Required for a change that may replace the email address: where the old address is told from (email-change.ts). */
  notice?: NoticeContext;
  /** The caller proved a recent sign-in (or is the application's own client): without it a change of the address is refused. */
  proven?: boolean;
  /** How a new password came: a form with the current one, a reset link, or the record API. */
  passwordBy?: 'form' | 'reset' | 'api';
}

/** A change of the email address made as the user without recent proof of a sign-in, found with the record locked. */
export class EmailChangeNeedsProofError extends Error {}

/** The names of what a change sets: its attributes, and the columns it gives (the password as `password`, never its hash). */
export function changedNames(change: RecordChange): string[] {
  const columns = (['email', 'username', 'emailVerified'] as const).filter((c) => change[c] !== undefined);
  return [...columns, ...(change.passwordHash ? ['password'] : []), ...Object.keys(change.attributes ?? {})];
}

/**
 * Writes a change of a user's record (a profile form, a new password) in the work's transaction
 * with its snapshot: the record is locked and changed; a change that sets a password hash also ends
 * every session but `keepSession`. A change that replaces the email address (judged on the locked
 * record) needs `proven` (else EmailChangeNeedsProofError), leaves the address unverified and tells
 * the old address (`notice`). Records `record.updated`, and `account.password_changed` and
 * `account.email_changed` when they apply.
 * Answers the record as committed, or undefined when it was deleted meanwhile (nothing written).
 * A taken email or username raises DuplicateAttributeError.
 */
export async function changeAccount(
  deps: AccountWrites, uow: UnitOfWork, acting: Acting, applicationId: number, entityId: number, change: RecordChange, options: ChangeOptions = {},
): Promise<UserRecord | undefined> {
  const { tx } = uow;
  const now = deps.clock.now();
  const locked = await deps.db.records.findForUpdate(applicationId, entityId, tx);
  if (!locked) return undefined;
  const moved = addressChanged(locked.email, change.email);
  if (moved && !options.proven) throw new EmailChangeNeedsProofError(`record ${entityId}: a change of the email address needs proof of a recent sign-in`);
  if (moved && !options.notice) throw new Error('a change of the email address needs a notice context');
  const changed = await deps.db.records.update(locked, moved ? { ...change, emailVerified: null } : change, now, tx);
  if (change.passwordHash) await endSessionsOf(deps.db, applicationId, entityId, PASSWORD_CHANGE_ENDS, options.keepSession ?? null, now, tx);
  const { snapshot } = await deps.versions.written(changed, tx);
  const subject = recordSubject(entityId);
  uow.record(event('record.updated', applicationId, now, acting, subject, { attributes: changedNames(change) }, { snapshot }));
  if (change.passwordHash) uow.record(event('account.password_changed', applicationId, now, acting, subject, { by: options.passwordBy ?? 'form' }));
  if (moved) await emailChangeNotice(deps.db, uow, acting, options.notice!, locked, changed, now);
  return changed;
}

/**
 * Deletes a user record with its codes, tokens and identities, and records `record.deleted` with
 * its tombstone snapshot (docs/versions.md). False when the record was gone already.
 */
export async function deleteRecord(deps: AccountWrites, uow: UnitOfWork, acting: Acting, applicationId: number, entityId: number): Promise<boolean> {
  const locked = await deps.db.records.findForUpdate(applicationId, entityId, uow.tx);
  if (!locked || !(await deps.db.records.remove(locked, uow.tx))) return false;
  // its credentials go with the row; its OpenID provider's sessions and grants with it
  await deps.db.oidcState.destroyOfRecord(applicationId, entityId, uow.tx);
  const now = deps.clock.now();
  uow.record(event('record.deleted', applicationId, now, acting, recordSubject(entityId), {}, { snapshot: deps.versions.deleted(locked, now) }));
  return true;
}

/** What a user's sessions are made of: what ending them spends. */
export const SESSION_KINDS: CredentialKind[] = [
  'access_token', 'refresh_token', 'refresh_secret', 'authorization_code', 'mfa_token', 'browser_session', 'oidc_code', 'oidc_access_token', 'oidc_refresh_token',
];

/**
 * Ends a record's sessions: its credentials of `kinds` (but those of the family `except`, the
 * caller's own session) and its OpenID provider's sessions and grants. Answers how many it ended.
 */
export async function endSessionsOf(db: Storage, applicationId: number, entityId: number, kinds: CredentialKind[], except: string | null, now: Date, tx: Tx): Promise<number> {
  const spent = await db.credentials.revokeForRecord(applicationId, entityId, kinds, except, now, tx);
  return spent + await db.oidcState.destroyOfRecord(applicationId, entityId, tx);
}
