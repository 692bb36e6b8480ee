import { deleteRecord } from '../../domain/accounts';
import { addressChanged, emailChangeNotice, recordLocale } from '../../domain/email-change';
import { event, recordSubject } from '../../domain/events';
import { formatTimestamp } from '../../domain/timestamps';
import { FRESH_SIGN_IN_SECONDS } from '../../domain/tokens';
import { checkUserDocument, renderWithProfiles } from '../../domain/users';
import type { UserRecord } from '../../domain/storage/records';
import type { RecordCall, RecordDeps } from './deps';
import { assertLongEnough } from './create-records';

type Doc = Record<string, unknown>;

/**
 * Who writes a record: the record's own access token (`byUser`; `fresh` when it proves a sign-in
 * minutes ago or a reset link), or a client acting for the application; `clientId` names the
 * client (its row id) either way.
 */
export interface Writer { record: UserRecord; byUser: boolean; fresh: boolean; clientId: number | null }

/** An attribute a change may not set, and why (the API names it `attributes.<name>`). */
export class AttributeRefusedError extends Error {
  constructor(readonly attribute: string, message: string) {
    super(message);
  }
}

/** The record was deleted between the request's read and its write. */
export class RecordGoneError extends Error {}

/** What a change can touch: the record as the API shows it, without what the service sets. */
function writableDocument(record: UserRecord): Doc {
  const { lastLogin: _l, ...attributes } = record.attributes;
  return { ...attributes, email: record.email, username: record.username, emailVerified: record.emailVerified ? formatTimestamp(record.emailVerified) : null };
}

/**
 * A changed document back into columns and the attribute set (checked like a new record's), with
 * what an access token may not change refused. `passwordHash` was computed before the row lock.
 */
function toRow(record: UserRecord, next: Doc, writer: Writer, passwordHash: string | undefined) {
  const { password: _p, ...doc } = checkUserDocument(next);
  const verifiedKept = (doc.emailVerified?.getTime() ?? null) === (record.emailVerified?.getTime() ?? null);
  if (writer.byUser && !verifiedKept) throw new AttributeRefusedError('emailVerified', 'cannot be changed with an access token');
  const moved = addressChanged(record.email, doc.email);
  if (writer.byUser && moved && record.email !== null && doc.email === null) {
    throw new AttributeRefusedError('email', 'cannot be removed with an access token: the account needs it to be recovered; change it to another address instead');
  }
  if (writer.byUser && moved && !writer.fresh) {
    throw new AttributeRefusedError('email', `changing the email address with an access token needs one from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
      + 'or from a password reset link (the new address receives the next reset link); sign in again, then send the change with the new access token');
  }
  const kept = record.attributes.lastLogin === undefined ? {} : { lastLogin: record.attributes.lastLogin };
  // a new address is unverified until verified, unless the application's client sets emailVerified with it
  return { ...doc, ...(moved && verifiedKept && { emailVerified: null }), attributes: { ...doc.attributes, ...kept }, passwordHash, moved };
}

/** The names of what a write changed: the columns and attributes whose values differ, and the password when one was set. */
function differing(before: UserRecord, after: UserRecord, passwordHash: string | undefined): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const columns = (['email', 'username', 'emailVerified'] as const).filter((c) => !same(before[c], after[c]));
  const names = new Set([...Object.keys(before.attributes), ...Object.keys(after.attributes)]);
  return [...columns, ...(passwordHash ? ['password'] : []), ...[...names].filter((n) => !same(before.attributes[n], after.attributes[n]))];
}

/**
 * /entity.update, /entity.replace and /entity.delete of a sub-value: applies `change` to the record
 * under a row lock, so concurrent writers never lose each other's change, with the snapshot of what
 * commits (record.updated or record.replaced, and account.password_changed when a password is set).
 * A change of the address is told to the old address (docs/api.md#changing-the-email-address).
 * Answers the record as the API shows it now; AttributeRefusedError, RecordGoneError, or
 * DuplicateAttributeError for a taken email or username.
 */
export async function changeRecord(
  deps: Omit<RecordDeps, 'entityQueryTimeoutMs'>,
  command: RecordCall & { writer: Writer; kind: 'record.updated' | 'record.replaced'; change: (current: Doc) => Doc; password?: string },
): Promise<Doc> {
  const { app, writer, acting } = command;
  const { db, clock, versions, baseUrls } = deps;
  assertLongEnough(app, command.password, 'attributes.password');
  // argon2 takes tens of milliseconds: before the row lock
  const passwordHash = command.password === undefined ? undefined : await deps.passwords.hash(command.password);
  return deps.work.run(async (uow) => {
    const { tx } = uow;
    const locked = await db.records.findForUpdate(app.id, writer.record.id, tx);
    if (!locked) throw new RecordGoneError('the record was deleted meanwhile');
    const { moved, ...row } = toRow(locked, command.change(writableDocument(locked)), writer, passwordHash);
    const now = clock.now();
    const changed = await db.records.replace(locked, row, now, tx);
    const written = await versions.written(changed, tx);
    const subject = recordSubject(locked.id);
    uow.record(event(command.kind, app.id, now, acting, subject, { attributes: differing(locked, changed, passwordHash) }, { snapshot: written.snapshot }));
    if (passwordHash) uow.record(event('account.password_changed', app.id, now, acting, subject, { by: 'api' }));
    // the old address is told, whoever changed it
    if (moved) {
      await emailChangeNotice(db, uow, acting, {
        app, baseUrl: baseUrls.of(app.name), locale: recordLocale(locked), clientId: writer.clientId, byUser: writer.byUser,
      }, locked, changed, now);
    }
    return written.rendered;
  });
}

/** /entity.delete: the record with its codes, tokens and identities; RecordGoneError when it was deleted meanwhile. */
export async function removeRecord(deps: Pick<RecordDeps, 'clock' | 'db' | 'versions' | 'work'>, command: RecordCall & { entityId: number }): Promise<void> {
  const deleted = await deps.work.run((uow) => deleteRecord(deps, uow, command.acting, command.app.id, command.entityId));
  if (!deleted) throw new RecordGoneError('the record was deleted meanwhile');
}

/** The record as the API shows it, with its linked identities. */
export async function shownRecord(deps: Pick<RecordDeps, 'db'>, record: UserRecord): Promise<Doc> {
  return renderWithProfiles(record, await deps.db.social.profiles.forEntity(record.applicationId, record.id));
}
