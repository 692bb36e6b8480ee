import { emailChangeNotice, addressChanged, type NoticeContext } from '../../domain/email-change';
import { event, recordSubject, type Acting } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
import type { RecordChange, UserRecord } from '../../domain/storage/records';
import type { Written } from '../../domain/versions';
import type { Application } from '../../domain/storage/applications';
import { OPERATOR_ROLE_ATTRIBUTE } from '../../domain/operators';
import type { CredentialKind } from '../../domain/storage/credentials';
import { endSessionsOf } from '../../domain/accounts';
import type { Services } from '../services';
import { reviseRecord } from './versions';

// Every change of a user's record goes through writeRecord: the record API's, the person's own
// forms (update_profile_native, the account page) and a password reset link's. One policy says who
// may write which attribute (docs/api.md#who-may-change-what); each caller words its refusals its
// own way (the API names `attributes.email`, a form names its form).

/**
 * Who writes: the application's own client (an owner or direct_access client), the person with
 * their access token, or the person with recent proof (a sign-in minutes ago, a reset link, or
 * the current password in the form).
 */
export type WriterRole = 'client' | 'person' | 'proven';

/** Through what: the record API, the person's own form, or a password reset link. */
export type WriteChannel = 'api' | 'form' | 'reset';

/** Why the policy refuses a write: what it changes, and that this writer may not. */
export type WriteRefusal = 'verification' | 'email_removed' | 'email_unproven' | 'password_api' | 'password_unproven' | 'operator_role';

/** What a write changes, as the policy judges it. */
export interface Judged { emailMoved: boolean; emailRemoved: boolean; verifiedChanged: boolean; password: boolean; roleChanged?: boolean }

/**
 * The one policy of record writes. The application's client writes anything. The person writes
 * their own record's attributes and username; never its verification state, never its email
 * address away (the account is recovered through it); a new address or a new password only with
 * recent proof, since the address receives the next reset link and the password signs in; and a
 * password never through the record API (the flow's password form holds its rules).
 */
export function refusalOf(role: WriterRole, channel: WriteChannel, judged: Judged): WriteRefusal | undefined {
  if (role === 'client') return undefined;
  // an operator's role is given by an operator (docs/console.md#operators), never by the account itself
  if (judged.roleChanged) return 'operator_role';
  // a reset link mailed to the address proves it (a new operator's first password verifies it); nothing else the person does
  if (judged.verifiedChanged && !(channel === 'reset' && !judged.emailMoved)) return 'verification';
  if (judged.emailRemoved) return 'email_removed';
  if (judged.password && channel === 'api') return 'password_api';
  if (judged.password && role !== 'proven') return 'password_unproven';
  if (judged.emailMoved && role !== 'proven') return 'email_unproven';
  return undefined;
}

/** What the policy judges of `change` to `before` (a new password counts as given: its hash is computed before the write). */
export function judge(before: UserRecord, change: RecordChange, password: boolean): Judged {
  const emailMoved = addressChanged(before.email, change.email);
  return {
    emailMoved,
    // an empty address is none (a form's field left empty)
    emailRemoved: emailMoved && before.email !== null && (change.email || null) === null,
    verifiedChanged: change.emailVerified !== undefined && (change.emailVerified?.getTime() ?? null) !== (before.emailVerified?.getTime() ?? null),
    password,
    roleChanged: change.attributes !== undefined
      && JSON.stringify(change.attributes[OPERATOR_ROLE_ATTRIBUTE] ?? null) !== JSON.stringify(before.attributes[OPERATOR_ROLE_ATTRIBUTE] ?? null),
  };
}

/** The policy's refusal, found with the record locked (the record changed since the caller judged it). */
export class WriteRefusedError extends Error {
  constructor(readonly reason: WriteRefusal) {
    super(`the change is refused: ${reason}`);
  }
}

/** What a new password ends: every session's tokens (an authorization code not yet exchanged stays). A sign-in paused for its second factor ends too: the password it proved is no longer the account's. */
const PASSWORD_CHANGE_ENDS: CredentialKind[] = ['refresh_token', 'access_token', 'refresh_secret', 'mfa_token', 'browser_session', 'console_session', 'oidc_access_token', 'oidc_refresh_token'];

/** One write of a record. */
export interface RecordWrite {
  app: Application;
  entityId: number;
  role: WriterRole;
  channel: WriteChannel;
  acting: Acting;
  /**
   * The change, made from the record as locked: merged into it, or (`replace`) its whole
   * client-written state (the record API's update and replace compute it).
   */
  change: (locked: UserRecord) => { change: RecordChange; replace?: boolean };
  /** A new password's hash (argon2 runs before the row lock). */
  passwordHash?: string;
  /** The family of the writer's own session, which a new password leaves signed in. */
  keepSession?: string | null;
  /** Where a change of the address is told from, and in which language, for the record as locked (docs/api.md#changing-the-email-address); a write that may move the address needs it. */
  notice?: (locked: UserRecord) => Omit<NoticeContext, 'byUser'>;
  kind?: 'record.updated' | 'record.replaced';
}

/**
 * Writes a change of a user's record in the unit of work, under the record's row lock (concurrent
 * writers never lose each other's change), judged by the one policy on the record as locked
 * (WriteRefusedError). A new address is unverified until verified, unless the application's
 * client sets emailVerified with it, and is told to the old address. A new password ends every
 * session but the writer's own, unless the application's client set it through the record API.
 * Records the record's event with what differs (and its snapshot), `account.password_changed`,
 * `account.email_verified` and `account.email_changed` when they apply. Answers the record as committed (and as shown), or
 * undefined when it was deleted meanwhile (nothing written). A taken email or username raises DuplicateAttributeError.
 */
export async function writeRecord(deps: Pick<Services, 'clock' | 'db' | 'versions'>, uow: UnitOfWork, write: RecordWrite): Promise<Written | undefined> {
  const { db } = deps;
  const { app, entityId, acting } = write;
  const { tx } = uow;
  const locked = await db.records.findForUpdate(app.id, entityId, tx);
  if (!locked) return undefined;
  const { change, replace } = write.change(locked);
  const password = write.passwordHash !== undefined;
  const judged = judge(locked, change, password);
  const refused = refusalOf(write.role, write.channel, judged);
  if (refused) throw new WriteRefusedError(refused);
  if (judged.emailMoved && !write.notice) throw new Error('a change of the email address needs a notice context');
  const unverified = judged.emailMoved && !(write.role === 'client' && judged.verifiedChanged);
  const next: RecordChange = { ...change, ...(unverified && { emailVerified: null }), ...(password && { passwordHash: write.passwordHash }) };
  const now = deps.clock.now();
  const written = await reviseRecord(deps, uow, locked, next, acting, { kind: write.kind, now, replace });
  // nothing a reader sees differs: no version, the record as it is
  if (!written) return deps.versions.written(locked, tx);
  const changed = written.record;
  if (password && !(write.role === 'client' && write.channel === 'api')) {
    await endSessionsOf(db, app.id, entityId, PASSWORD_CHANGE_ENDS, write.keepSession ?? null, now, uow);
  }
  const subject = recordSubject(entityId);
  if (password) uow.record(event('account.password_changed', app.id, now, acting, subject, { by: write.channel }));
  // an address verified by this write (an operator, or the application's client setting emailVerified)
  if (changed.email && changed.emailVerified && (!locked.emailVerified || judged.emailMoved)) uow.record(event('account.email_verified', app.id, now, acting, subject, {}));
  if (judged.emailMoved) await emailChangeNotice(db, uow, acting, { ...write.notice!(locked), byUser: write.role !== 'client' }, locked, changed, now);
  return written;
}
