import type { Application } from './storage/applications';
import type { Storage, Tx } from './storage';
import type { OutboxJob } from './storage/outbox';
import { uniqueKey, type UserRecord } from './storage/records';
import type { Outbox } from './ports';
import { displayName, mailJob, withParameter } from './mail';
import { randomToken, sha256Hex, type SecretBox } from './secrets';

// A changed email address moves the account's recovery to the new address, so a change is told to
// the old address at once with a link that undoes it (docs/api.md#changing-the-email-address).

/** How long the old address may undo a change of the email address: two weeks. */
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
 * The language of an email about a record when no flow names one (a change through the record
 * API): the record's `locale` attribute when it holds a language tag (`fr-FR`), else en-US.
 */
export const recordLocale = (record: UserRecord): string => {
  const tag = record.attributes.locale;
  return typeof tag === 'string' && /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(tag) ? tag : 'en-US';
};

/** What the undo code keeps: the address the change replaced, and when that address was verified. */
export interface UndoExtra { previous_email: string; previous_verified: string | null }

/** What writes an email change's notice: the storage and outbox of the change's transaction, the box sealing its link. */
export interface NoticeDeps { db: Storage; outbox: Outbox; box: SecretBox }

/** Where a notice goes out from: the application, its own base URL, the email's language, and the client that made the change. */
export interface NoticeContext { box: SecretBox; app: Application; baseUrl: string; locale: string; clientId: number | null }

/** The changed address's side effects that need no notice: verification codes mailed for the old address stop working. */
export async function spendOldAddressCodes(db: Storage, record: UserRecord, now: Date, tx: Tx): Promise<void> {
  await db.credentials.revokeForRecord(record.applicationId, record.id, ['verification_code'], null, now, tx);
}

/**
 * In the change's transaction: the codes mailed for the old address are spent, and when the record
 * had an address, an undo code is stored and the email telling the old address is returned as an
 * outbox job (`locale`: the email's language; `baseUrl`: the application's own).
 */
export async function emailChangeNotice(
  deps: NoticeDeps, tx: Tx, notice: Omit<NoticeContext, 'box'>, before: UserRecord, after: UserRecord, now: Date,
): Promise<OutboxJob[]> {
  const { app } = notice;
  await spendOldAddressCodes(deps.db, before, now, tx);
  if (before.email === null) return [];
  const code = randomToken(20);
  const extra: UndoExtra = { previous_email: before.email, previous_verified: before.emailVerified?.toISOString() ?? null };
  await deps.db.credentials.insert([{
    applicationId: app.id, kind: 'email_change_undo', valueHash: sha256Hex(code), entityId: before.id, clientId: notice.clientId,
    forClientId: null, redirectUri: null, extra: extra as unknown as Record<string, unknown>, family: null,
    expiresAt: new Date(now.getTime() + EMAIL_CHANGE_UNDO_SECONDS * 1000),
  }], now, tx);
  return [mailJob(deps.outbox, deps.box, app, {
    template: 'email-changed', locale: notice.locale, to: before.email, name: displayName(before),
    link: withParameter(`${notice.baseUrl}${UNDO_EMAIL_CHANGE_PATH}`, 'code', code), expiresIn: EMAIL_CHANGE_UNDO_SECONDS,
    newEmail: after.email ?? '',
  })];
}
