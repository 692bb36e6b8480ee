import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { EMAIL_CHANGE_UNDO_SECONDS, recordLocale, type UndoExtra } from '../../domain/email-change';
import { displayName } from '../../domain/mail';
import { event, recordSubject, type Origin } from '../../domain/events';
import { sha256Hex } from '../../domain/secrets';
import type { Application } from '../../domain/storage/applications';
import { DuplicateAttributeError, uniqueKey } from '../../domain/storage/records';
import type { Services } from '../services';
import { reviseRecord } from '../records/versions';

/**
 * An undo link's result: the old address is back (`restored`), the code is not usable (unknown,
 * spent or expired), its account is gone, or another account holds the old address (`taken`:
 * nothing changed; the old address is reserved for the account while its link lives, so only an
 * address taken before that, by an older release, can do this).
 */
export type UndoOutcome = { kind: 'restored'; email: string } | { kind: 'spent' } | { kind: 'gone' } | { kind: 'taken' };

/**
 * docs/api.md#changing-the-email-address: the old address's answer to a change it did not make. In
 * one transaction: the undo code is spent (once, under concurrency too), with every undo link the
 * account got after it (a chain of changes cannot be undone back to an address of the attacker's);
 * the record gets its old address back, verified as it was; every session, code and link of the
 * account ends and the identities linked since the change are unlinked, so whoever changed it is
 * signed out and cannot come back through a reset it started or an identity of its own; and the
 * address it replaces is told, without a link.
 */
export async function undoEmailChange(
  services: Pick<Services, 'clock' | 'db' | 'versions' | 'work'>, command: { app: Application; code: string; origin: Origin },
): Promise<UndoOutcome> {
  const { db, work, clock } = services;
  const { app, code } = command;
  const hash = sha256Hex(code);
  try {
    return await work.run<UndoOutcome>(async (uow) => {
      const { tx } = uow;
      const now = clock.now();
      if (!(await db.credentials.consume(app.id, 'email_change_undo', hash, now, tx))) return { kind: 'spent' };
      const row = (await db.credentials.find(app.id, 'email_change_undo', hash, tx))!;
      const extra = row.extra as unknown as UndoExtra;
      const record = row.entityId === null ? undefined : await db.records.findForUpdate(app.id, row.entityId, tx);
      if (!record || typeof extra?.previous_email !== 'string') throw new GoneError();
      // whoever holds the link mailed to the old address: the person the record was
      const acting = { actor: { kind: 'account' as const, accountId: record.id }, origin: command.origin };
      const subject = recordSubject(record.id);
      // the links of later changes (their versions are higher) end with this one
      for (const later of await db.credentials.liveOfRecord(app.id, record.id, 'email_change_undo', now, tx)) {
        if (Number((later.extra as Partial<UndoExtra> | null)?.version ?? Infinity) > Number(extra.version ?? 0)) {
          await db.credentials.consume(app.id, 'email_change_undo', later.valueHash, now, tx);
        }
      }
      // identities linked since the change (a way back in for whoever made it) are unlinked
      const changedAt = row.expiresAt.getTime() - EMAIL_CHANGE_UNDO_SECONDS * 1000;
      for (const linked of await db.social.profiles.forEntity(app.id, record.id, tx)) {
        if (linked.created.getTime() < changedAt) continue;
        await db.social.profiles.remove(app.id, record.id, linked.identifier, tx);
        uow.record(event('account.identity_unlinked', app.id, now, acting, subject, { provider: linked.provider }));
      }
      const verified = typeof extra.previous_verified === 'string' ? new Date(extra.previous_verified) : now;
      await reviseRecord(services, uow, record, { email: extra.previous_email, emailVerified: verified }, acting, { now });
      await endSessionsOf(db, app.id, record.id, [...SESSION_KINDS, 'verification_code'], null, now, uow);
      const displaced = record.email !== null && uniqueKey(record.email) !== uniqueKey(extra.previous_email)
        ? { mail: { app, template: 'email-changed-notice' as const, locale: recordLocale(record), to: record.email, name: displayName(record) } }
        : undefined;
      uow.record(event('account.email_change_undone', app.id, now, acting, subject, {}, displaced));
      return { kind: 'restored', email: extra.previous_email };
    });
  } catch (e) {
    if (e instanceof GoneError) return { kind: 'gone' };
    if (!(e instanceof DuplicateAttributeError)) throw e;
    return { kind: 'taken' };
  }
}

/** The account of an undo code was deleted: the transaction rolls back, the code stays as it was. */
class GoneError extends Error {}
