import { event, recordSubject } from '../../domain/events';
import { lockedRecord, type AccountCommand, type OperatorDeps } from './deps';
import { operatorMail } from './sign-out-user';

/**
 * Resets a user's second factor (docs/lifecycle.md), for a person who lost
 * the authenticator: its authenticator app and recovery codes are removed, and sign-ins waiting
 * for a code end, so the password alone signs in (where the application requires a second factor,
 * the next sign-in asks to add one). Passkeys stay: each is removed on its own. The person is told
 * by email. Answers whether there was an authenticator to remove (none: nothing changes, no email).
 */
export function resetSecondFactor(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<{ removed: boolean }> {
  const { app, entityId } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const record = await lockedRecord(deps.db, command, uow.tx);
    if (!(await deps.db.factors.removeTotp(app.id, entityId, uow.tx))) return { removed: false };
    await deps.db.credentials.revokeForRecord(app.id, entityId, ['recovery_code', 'mfa_token'], null, now, uow.tx);
    uow.record(event('account.second_factor_removed', app.id, now, command.acting, recordSubject(entityId), { method: 'totp' }, operatorMail(app, record, 'second-factor-reset')));
    // (no version of the record: its snapshot does not show how it signs in)
    return { removed: true };
  });
}
