import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { operatorActing, type AccountCommand, type OperatorDeps } from './deps';

/**
 * Disables a user: it cannot sign in, and every session ends (tokens, codes and verification links
 * spent); what a sign-in in flight issues does not work either (every grant refuses a disabled
 * user's access token, authorization code, refresh token and SDK session, and enabling spends
 * them). Answers how many tokens and codes it spent.
 */
export function disableUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<{ spent: number }> {
  const { applicationId, entityId } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    await deps.db.records.setDisabled(applicationId, entityId, now, uow.tx);
    // its verification links too: nothing mailed before the disable works after it
    const spent = await endSessionsOf(deps.db, applicationId, entityId, [...SESSION_KINDS, 'verification_code'], null, now, uow.tx);
    uow.record(event('account.disabled', applicationId, now, operatorActing(command.operator), recordSubject(entityId), {}));
    return { spent };
  });
}
