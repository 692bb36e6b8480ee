import { NoSuchClientError, SelfDeletionError } from '../../domain/clients';
import { event } from '../../domain/events';
import type { AdminCall, AdminDeps } from './deps';

/** Deletes a client; a client cannot delete itself (SelfDeletionError). */
export function deleteClient(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { callerClientId?: string; clientId: string }): Promise<void> {
  const { applicationId, clientId } = command;
  if (clientId === command.callerClientId) return Promise.reject(new SelfDeletionError());
  return deps.work.run(async (uow) => {
    if (!(await deps.db.clients.remove(applicationId, clientId, uow.tx))) throw new NoSuchClientError(clientId);
    uow.record(event('client.deleted', applicationId, deps.clock.now(), command.acting, { kind: 'client', id: clientId }, {}));
  });
}
