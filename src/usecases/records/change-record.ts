import { OPERATOR_ROLE_ATTRIBUTE } from '../../domain/operators';
import { deleteRecord } from '../../domain/accounts';
import { recordLocale } from '../../domain/email-change';
import { formatTimestamp } from '../../domain/timestamps';
import { FRESH_SIGN_IN_SECONDS } from '../../domain/tokens';
import { checkUserDocument, renderWithProfiles } from '../../domain/users';
import type { RecordChange, UserRecord } from '../../domain/storage/records';
import type { RecordCall, RecordDeps } from './deps';
import { assertLongEnough } from './create-records';
import { refusalOf, writeRecord, WriteRefusedError, type WriteRefusal, type WriterRole } from './write-record';

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

/** A changed document back into the record's client-written state (checked like a new record's), the service's own attributes kept. */
function toChange(record: UserRecord, next: Doc): RecordChange {
  const { password: _p, hashed: _h, ...doc } = checkUserDocument(next);
  const kept = record.attributes.lastLogin === undefined ? {} : { lastLogin: record.attributes.lastLogin };
  return { email: doc.email, username: doc.username, emailVerified: doc.emailVerified, attributes: { ...doc.attributes, ...kept } };
}

/** The policy's refusal as the record API says it: the attribute, and what to do instead. */
function attributeRefusal(reason: WriteRefusal): AttributeRefusedError {
  switch (reason) {
    case 'verification': return new AttributeRefusedError('emailVerified', 'cannot be changed with an access token');
    case 'email_removed':
      return new AttributeRefusedError('email', 'cannot be removed with an access token: the account needs it to be recovered; change it to another address instead');
    case 'email_unproven':
      return new AttributeRefusedError('email', `changing the email address with an access token needs one from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
        + 'or from a password reset link (the new address receives the next reset link); sign in again, then send the change with the new access token');
    case 'password_api':
    case 'password_unproven':
      return new AttributeRefusedError('password', 'cannot be set with an access token; use update_profile_native');
    case 'operator_role':
      return new AttributeRefusedError(OPERATOR_ROLE_ATTRIBUTE, 'is an operator\'s role in the console, given by an operator (gatehouse operators:role), never with the account\'s own access token');
  }
}

/** The writer's role in the one policy of record writes. */
const roleOf = (writer: Writer): WriterRole => (!writer.byUser ? 'client' : writer.fresh ? 'proven' : 'person');

/**
 * /entity.update, /entity.replace and /entity.delete of a sub-value: `change` applied to the
 * record under its row lock (writeRecord: the one writer and its policy), with the snapshot of
 * what commits (record.updated or record.replaced, and account.password_changed when a password is
 * set). A change of the address is told to the old address (docs/api.md#changing-the-email-address).
 * Answers the record as the API shows it now; AttributeRefusedError, RecordGoneError, or
 * DuplicateAttributeError for a taken email or username.
 */
export async function changeRecord(
  deps: Pick<RecordDeps, 'baseUrls' | 'clock' | 'db' | 'passwords' | 'versions' | 'work'>,
  command: RecordCall & { writer: Writer; kind: 'record.updated' | 'record.replaced'; change: (current: Doc) => Doc; password?: unknown },
): Promise<Doc> {
  const { app, writer, acting } = command;
  const role = roleOf(writer);
  let password: string | undefined;
  if (command.password !== undefined) {
    // refused before argon2 runs: by the policy, then by the password rules
    const refused = refusalOf(role, 'api', { emailMoved: false, emailRemoved: false, verifiedChanged: false, password: true });
    if (refused) throw attributeRefusal(refused);
    const checked = checkUserDocument({ password: command.password });
    if (checked.hashed) throw new AttributeRefusedError('password', 'a password hash from another system is taken when a record is created (/entity.create, /entity.bulkCreate, gatehouse users:import); here send the password itself');
    password = checked.password;
    assertLongEnough(app, password, 'attributes.password');
  }
  // argon2 takes tens of milliseconds: before the row lock
  const passwordHash = password === undefined ? undefined : await deps.passwords.hash(password);
  // told in the record's own language (its `locale` attribute) as locked
  const notice = (locked: UserRecord) => ({ app, baseUrl: deps.baseUrls.of(app.name), locale: recordLocale(locked), clientId: writer.clientId });
  try {
    const written = await deps.work.run((uow) => writeRecord(deps, uow, {
      app, entityId: writer.record.id, role, channel: 'api', acting, kind: command.kind, passwordHash, notice,
      change: (locked) => ({ change: toChange(locked, command.change(writableDocument(locked))), replace: true }),
    }));
    if (!written) throw new RecordGoneError('the record was deleted meanwhile');
    return written.rendered;
  } catch (e) {
    if (e instanceof WriteRefusedError) throw attributeRefusal(e.reason);
    throw e;
  }
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
