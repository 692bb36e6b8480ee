import type { Application } from './storage/applications';
import type { Storage } from './storage';
import { uniqueKey, type UserRecord } from './storage/records';
import type { UnitOfWork } from './ports';
import { event, recordSubject, type Acting } from './events';
import { displayName, withParameter } from './mail';
import { randomToken, sha256Hex } from './secrets';
import type { MailRequest } from './mail';

// A changed email address moves the account's recovery to the new address, so a change is told to
// the old address at once; when the user changed a verified address, with a link that undoes it
// (docs/api.md#changing-the-email-address).

/** How long the old address may undo a change of the email address, and stays reserved for it: two weeks. */
export const EMAIL_CHANGE_UNDO_SECONDS = 14 * 86_400;

/** The path of the page an undo link opens, under the application's own base URL. */
export const UNDO_EMAIL_CHANGE_PATH = '/undo-email-change';

/**
 * Whether `after` is another address than `before` (undefined: not part of the change). The same
 * address in other letter case or Unicode composition is the same account key, so no change.
 */
export const addressChanged = (before: string | null, after: string | null | undefined): boolean =>
  after !== undefined && uniqueKey(before) !== uniqueKey(after === '' ? null : after);

/**
 * The `value_hash` of the credential that reserves an address for the record that may take it back
 * (kind `email_reservation`): while it lives, no other record of the application may take the address.
 */
export const reservationHash = (applicationId: number, email: string): string => sha256Hex(`email reservation\n${applicationId}\n${uniqueKey(email)}`);

/**
 * The language of an email about a record when no flow names one (a change through the record
 * API): the record's `locale` attribute when it holds a language tag (`fr-FR`), else en-US.
 */
export const recordLocale = (record: UserRecord): string => {
  const tag = record.attributes.locale;
  return typeof tag === 'string' && /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(tag) ? tag : 'en-US';
};

/**
 * What the undo code keeps: the address the change replaced, when that address was verified, and
 * the record's version the change wrote (the order of a chain of changes, whatever the pods' clocks).
 */
export interface UndoExtra { previous_email: string; previous_verified: string; version: number }

/**
 * Where a notice goes out from: the application, its own base URL, the email's language, the
 * client that made the change, and whether the user made it (`byUser`: with proof, as the user;
 * otherwise the application's own client acting for it).
 */
export interface NoticeContext { app: Application; baseUrl: string; locale: string; clientId: number | null; byUser: boolean }

/**
 * In the change's transaction: the codes mailed to the old address (verification and reset links)
 * are spent, and the old address is told. When the user replaced a verified address, the email
 * carries a link that undoes the change, and the old address stays reserved for this record while
 * the link lives (nobody can take it to block the undo). An address never verified (a typo, maybe a
 * stranger's) and a change the application made (support moving someone off a lost mailbox) get a
 * notice without a link and without the new address.
 */
export async function emailChangeNotice(
  db: Storage, uow: UnitOfWork, acting: Acting, notice: NoticeContext, before: UserRecord, after: UserRecord, now: Date,
): Promise<void> {
  const { app } = notice;
  const { tx } = uow;
  // (and the sign-in codes mailed to the old address)
  await db.credentials.revokeForRecord(app.id, before.id, ['verification_code', 'authorization_code', 'email_code'], null, now, tx);
  const changed = (undoable: boolean, mail?: MailRequest) =>
    uow.record(event('account.email_changed', app.id, now, acting, recordSubject(before.id), { undoable }, mail && { mail }));
  if (before.email === null) return changed(false);
  const mail = { app, locale: notice.locale, to: before.email, name: displayName(before) };
  if (!notice.byUser || before.emailVerified === null) return changed(false, { template: 'email-changed-notice', ...mail });
  const code = randomToken(20);
  const extra: UndoExtra = { previous_email: before.email, previous_verified: before.emailVerified.toISOString(), version: after.version };
  const expiresAt = new Date(now.getTime() + EMAIL_CHANGE_UNDO_SECONDS * 1000);
  await db.credentials.insert([{
    applicationId: app.id, kind: 'email_change_undo', valueHash: sha256Hex(code), entityId: before.id, clientId: notice.clientId,
    forClientId: null, redirectUri: null, extra: extra as unknown as Record<string, unknown>, family: null, expiresAt,
  }], now, tx);
  await db.credentials.reserve(app.id, 'email_reservation', reservationHash(app.id, before.email), before.id, expiresAt, now, tx);
  changed(true, {
    template: 'email-changed', ...mail, link: withParameter(`${notice.baseUrl}${UNDO_EMAIL_CHANGE_PATH}`, 'code', code),
    expiresIn: EMAIL_CHANGE_UNDO_SECONDS, newEmail: after.email ?? '',
  });
}
