import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { operatorActing, type AccountCommand, type OperatorDeps } from './deps';

/** Ends every session of a user: its access and refresh tokens, refresh secrets and unused authorization codes. Answers how many it spent. */
export function signOutUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<{ spent: number }> {
  const { applicationId, entityId } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const spent = await endSessionsOf(deps.db, applicationId, entityId, SESSION_KINDS, null, now, uow.tx);
    uow.record(event('account.signed_out', applicationId, now, operatorActing(command.operator), recordSubject(entityId), { tokens: spent }));
    return { spent };
  });
}
