import { event, recordSubject, type Acting, type DomainEvent } from './events';
import type { UnitOfWork } from './ports';
import type { Storage, Tx } from './storage';
import type { CredentialKind } from './storage/credentials';
import type { RecordChange } from './storage/records';
import type { RecordVersions } from './versions';
import type { Clock } from './clients';
import { authorizationsOf, logoutTargetOf, noticesFor, type LogoutTarget } from './backchannel-logout';

// What every change of a user's account shares — the names it records, a deletion, the sessions
// it ends — written through the unit of work of the use case that makes it. A record's own
// changes go through one writer and its policy (src/usecases/records/write-record.ts).

/** What an account change writes with: the storage, the snapshots of records, and the clock (the services have all three). */
export interface AccountWrites { db: Storage; versions: RecordVersions; clock: Clock }

/** The names of what a change sets: its attributes, and the columns it gives (the password as `password`, never its hash). */
export function changedNames(change: RecordChange): string[] {
  const columns = (['email', 'username', 'emailVerified'] as const).filter((c) => change[c] !== undefined);
  return [...columns, ...(change.passwordHash ? ['password'] : []), ...Object.keys(change.attributes ?? {})];
}

/**
 * Deletes a user record with its codes, tokens and identities, and records `record.deleted` with
 * its tombstone snapshot (docs/versions.md). False when the record was gone already.
 */
export async function deleteRecord(deps: AccountWrites, uow: UnitOfWork, acting: Acting, applicationId: number, entityId: number): Promise<boolean> {
  const locked = await deps.db.records.findForUpdate(applicationId, entityId, uow.tx);
  if (!locked || !(await deps.db.records.remove(locked, uow.tx))) return false;
  // its credentials go with the row; its OpenID provider's sessions and grants with it (their apps told)
  const now = deps.clock.now();
  await oweLogouts(deps.db, uow, applicationId, entityId, now);
  await deps.db.oidcState.destroyOfRecord(applicationId, entityId, uow.tx);
  uow.record(event('record.deleted', applicationId, now, acting, recordSubject(entityId), {}, { snapshot: deps.versions.deleted(locked, now) }));
  return true;
}

/** What a user's sessions are made of: what ending them spends (a sign-in waiting for its second factor, or for one to be added, included). */
export const SESSION_KINDS: CredentialKind[] = [
  'access_token', 'refresh_token', 'refresh_secret', 'authorization_code', 'mfa_token', 'enroll_token', 'browser_session', 'console_session', 'oidc_code', 'oidc_access_token',
  'oidc_refresh_token', 'oidc_device_code', 'oidc_user_code',
];

/**
 * Everything of a record's that signs in, proves it or gets it back: its sessions, and its
 * recovery codes, mailed codes and links (verification, email codes, the undo of an address change
 * and the address it holds), passkey ceremonies begun. What taking an account over ends.
 */
export const EVERY_HOLD_ON_A_RECORD: CredentialKind[] = [
  ...SESSION_KINDS, 'recovery_code', 'verification_code', 'email_code', 'email_change_undo', 'email_reservation', 'passkey_challenge',
];

/**
 * Ends a record's sessions: its credentials of `kinds` (but those of the family `except`, the
 * caller's own session) and its OpenID provider's sessions and grants. Answers how many it ended.
 */
export async function endSessionsOf(db: Storage, applicationId: number, entityId: number, kinds: CredentialKind[], except: string | null, now: Date, uow: UnitOfWork): Promise<number> {
  const spent = await db.credentials.revokeForRecord(applicationId, entityId, kinds, except, now, uow.tx);
  await oweLogouts(db, uow, applicationId, entityId, now);
  return spent + await db.oidcState.destroyOfRecord(applicationId, entityId, uow.tx);
}

/**
 * What ending the record's sessions at the OpenID provider owes its apps (docs/openid-connect.md#back-channel-logout):
 * each app a session signed in to that has a back-channel logout address is owed a logout token
 * naming the account and the session it was given, recorded as `oidc.backchannel_logout` (its
 * subscriber writes the tokens to send). Read before the sessions are deleted; with `grantId`,
 * only the app of that grant. Records nothing when no app is owed anything.
 */
export async function oweLogouts(db: Storage, uow: UnitOfWork, applicationId: number, entityId: number, now: Date, grantId?: string): Promise<void> {
  const owed = await logoutsOwed(db, uow.tx, applicationId, entityId, now, grantId);
  if (owed) uow.record(owed);
}

/** oweLogouts' event, for a caller that records it only once its change is sure (an erasure); undefined when no app is owed anything. */
export async function logoutsOwed(db: Storage, tx: Tx, applicationId: number, entityId: number, now: Date, grantId?: string): Promise<DomainEvent | undefined> {
  const sessions = await db.oidcState.listOfRecord(applicationId, 'Session', entityId, now, tx);
  const authorizations = sessions.flatMap((s) => authorizationsOf(s.payload, grantId));
  if (authorizations.length === 0) return undefined;
  const targets = new Map<string, LogoutTarget | undefined>();
  for (const clientId of new Set(authorizations.map((a) => a.clientId))) targets.set(clientId, logoutTargetOf((await db.clients.find(applicationId, clientId))?.settings ?? {}));
  const notices = noticesFor(authorizations, (clientId) => targets.get(clientId));
  if (notices.length === 0) return undefined;
  const record = await db.records.find(applicationId, { id: entityId }, tx);
  const subject = record?.uuid ?? (typeof sessions[0].payload.accountId === 'string' ? sessions[0].payload.accountId : undefined);
  if (subject === undefined) return undefined;
  return event('oidc.backchannel_logout', applicationId, now, { actor: { kind: 'system' }, origin: {} }, recordSubject(entityId),
    { clients: [...new Set(notices.map((n) => n.clientId))] }, { logouts: { subject, notices } });
}
