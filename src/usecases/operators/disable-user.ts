import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { invalidField } from '../../domain/refusal';
import type { Disabled } from '../../domain/storage/records';
import type { UnitOfWork } from '../unit-of-work';
import { lockedRecord, type AccountCommand, type OperatorDeps } from './deps';

/** The longest reason kept with a disable (its column's size). */
export const MAX_DISABLE_REASON = 500;

/** A disable: until when (none: until enabled) and why (the operator's words, for operators only). */
export interface DisableCommand extends AccountCommand { until?: Date; reason?: string }

/**
 * Disables a user (docs/lifecycle.md): it cannot sign in by any method,
 * and every session ends (tokens, codes and verification links spent); what a sign-in in flight
 * issues does not work either (every grant refuses a disabled user's access token, authorization
 * code, refresh token and SDK session, and enabling spends them). With `until`, the disable ends by
 * itself at that time. Disabling a disabled user replaces its until and reason. Answers the disable
 * and how many tokens and codes it spent.
 */
export function disableUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: DisableCommand): Promise<{ spent: number; disabled: Disabled }> {
  const now = deps.clock.now();
  if (command.until !== undefined && command.until <= now) {
    throw invalidField('until', 'is not in the future: an account disabled until a past time would not be disabled at all (omit it to disable until enabled)');
  }
  const reason = command.reason?.trim() || null;
  if (reason !== null && reason.length > MAX_DISABLE_REASON) throw invalidField('reason', `is longer than ${MAX_DISABLE_REASON} characters`);
  const disabled: Disabled = { at: now, until: command.until ?? null, reason };
  return deps.work.run(async (uow) => ({ spent: await disableInWork(deps, uow, command, disabled), disabled }));
}

/**
 * The disable itself, in the unit of work `uow` (an operator's, or an organization's directory
 * deprovisioning the account: docs/scim.md): the record locked, disabled, every session and mailed
 * link spent, `account.disabled` recorded; answers how many tokens and codes it spent.
 */
export async function disableInWork(deps: Pick<OperatorDeps, 'db'>, uow: UnitOfWork, command: AccountCommand, disabled: Disabled): Promise<number> {
  const { entityId } = command;
  const applicationId = command.app.id;
  await lockedRecord(deps.db, command, uow.tx);
  await deps.db.records.setDisabled(applicationId, entityId, disabled, uow.tx);
  // its verification links too: nothing mailed before the disable works after it
  const spent = await endSessionsOf(deps.db, applicationId, entityId, [...SESSION_KINDS, 'verification_code'], null, disabled.at, uow);
  uow.record(event('account.disabled', applicationId, disabled.at, command.acting, recordSubject(entityId), {
    ...(disabled.until && { until: disabled.until.toISOString() }), ...(disabled.reason !== null && { reason: disabled.reason }),
  }));
  return spent;
}
