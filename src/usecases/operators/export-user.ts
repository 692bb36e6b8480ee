import type { AccountExport } from '../../domain/account-export';
import { event, recordSubject } from '../../domain/events';
import { exportAccount } from '../account/export-account';
import { lockedRecord, type AccountCommand, type OperatorDeps } from './deps';

/**
 * An operator's or an application backend's export of an account (docs/lifecycle.md#export): the
 * account's whole document (exportAccount), and an `account.exported` event naming who took it, so
 * that the audit log shows every copy of a person's data that left the service.
 */
export async function exportUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'>, command: AccountCommand): Promise<AccountExport> {
  const { app, entityId } = command;
  // read first: an export that fails is neither taken nor audited
  const document = await exportAccount(deps, { app, entityId });
  await deps.work.run(async (uow) => {
    await lockedRecord(deps.db, command, uow.tx);
    uow.record(event('account.exported', app.id, deps.clock.now(), command.acting, recordSubject(entityId), {}));
  });
  return document;
}
