import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { operatorActing, type AccountCommand, type OperatorDeps } from './deps';

/**
 * Enables a disabled user again: it may sign in. Its sessions stay ended: what a sign-in in flight
 * may have issued while it was being disabled (no access token of it worked meanwhile) is spent
 * with the change, so nothing from the disabled time comes back to life.
 */
export function enableUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<void> {
  const { applicationId, entityId } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    await endSessionsOf(deps.db, applicationId, entityId, SESSION_KINDS, null, now, uow.tx);
    await deps.db.records.setDisabled(applicationId, entityId, null, uow.tx);
    uow.record(event('account.enabled', applicationId, now, operatorActing(command.operator), recordSubject(entityId), {}));
  });
}
