import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { isDisabled, type UserRecord } from '../../domain/storage/records';
import type { UnitOfWork } from '../unit-of-work';
import { lockedRecord, type AccountCommand, type OperatorDeps } from './deps';

/**
 * Enables a disabled user again: it may sign in. Its sessions stay ended: what a sign-in in flight
 * may have issued while it was being disabled (no access token of it worked meanwhile) is spent
 * with the change, so nothing from the disabled time comes back to life. Answers whether it was
 * disabled (enabling an enabled user changes nothing and records nothing).
 */
export function enableUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<{ wasDisabled: boolean }> {
  return deps.work.run(async (uow) => ({ wasDisabled: await enableInWork(deps, uow, command) }));
}

/**
 * The enable itself, in the unit of work `uow`, when `may` allows the disable as locked (an
 * organization's directory undoes its own only: docs/scim.md); answers whether it enabled.
 */
export async function enableInWork(
  deps: Pick<OperatorDeps, 'clock' | 'db'>, uow: UnitOfWork, command: AccountCommand, may: (disabled: UserRecord['disabled']) => boolean = () => true,
): Promise<boolean> {
  const { entityId } = command;
  const applicationId = command.app.id;
  const now = deps.clock.now();
  const record = await lockedRecord(deps.db, command, uow.tx);
  // not disabled, or a disable whose time is over: nothing to do (an ended disable's window stays
  // kept, so what a sign-in in flight issued while it lasted stays refused)
  if (!isDisabled(record, now) || !may(record.disabled)) return false;
  await endSessionsOf(deps.db, applicationId, entityId, SESSION_KINDS, null, now, uow);
  await deps.db.records.setDisabled(applicationId, entityId, null, uow.tx);
  uow.record(event('account.enabled', applicationId, now, command.acting, recordSubject(entityId), {}));
  return true;
}
