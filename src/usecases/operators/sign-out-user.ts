import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { recordLocale } from '../../domain/email-change';
import { event, recordSubject } from '../../domain/events';
import { displayName, type MailRequest } from '../../domain/mail';
import type { Application } from '../../domain/storage/applications';
import type { UserRecord } from '../../domain/storage/records';
import { lockedRecord, type AccountCommand, type OperatorDeps } from './deps';

/** The email that tells the person what an operator did to their account, when it has an address. */
export const operatorMail = (app: Application, record: UserRecord, template: 'signed-out-everywhere' | 'second-factor-reset'): { mail: MailRequest } | undefined =>
  (record.email ? { mail: { app, template, locale: recordLocale(record), to: record.email, name: displayName(record) } } : undefined);

/**
 * Signs a user out everywhere (docs/lifecycle.md): its access and refresh
 * tokens, SDK sessions, unused authorization codes, browser sessions and OpenID grants end; the
 * password stays. The person is told by email. Answers how many tokens and codes it spent.
 */
export function signOutUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<{ spent: number }> {
  const { app, entityId } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const record = await lockedRecord(deps.db, command, uow.tx);
    const spent = await endSessionsOf(deps.db, app.id, entityId, SESSION_KINDS, null, now, uow);
    uow.record(event('account.signed_out', app.id, now, command.acting, recordSubject(entityId), { tokens: spent }, operatorMail(app, record, 'signed-out-everywhere')));
    return { spent };
  });
}
