import { deleteRecord } from '../../domain/accounts';
import type { AccountCommand, OperatorDeps } from './deps';

/** Deletes a user record with its tokens, codes and identities (its history stays). False when it was gone already. */
export function deleteUser(deps: OperatorDeps, command: AccountCommand): Promise<boolean> {
  return deps.work.run((uow) => deleteRecord(deps, uow, command.acting, command.app.id, command.entityId));
}
