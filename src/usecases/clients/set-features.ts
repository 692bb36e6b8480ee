import { NoSuchClientError, OwnOwnerFeatureError, type Feature } from '../../domain/clients';
import { event } from '../../domain/events';
import type { AdminCall, AdminDeps } from './deps';

/** Sets a client's features. An owner client cannot take its own owner feature away (OwnOwnerFeatureError). */
export function setFeatures(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { callerClientId?: string; forClientId: string; features: Feature[] }): Promise<void> {
  const { applicationId, forClientId, features } = command;
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const updated = await deps.db.clients.mutate(applicationId, forClientId, (current) => {
      if (forClientId === command.callerClientId && current.features.includes('owner') && !features.includes('owner')) throw new OwnOwnerFeatureError();
      return { features };
    }, now, uow.tx);
    if (!updated) throw new NoSuchClientError(forClientId);
    uow.record(event('client.changed', applicationId, now, command.acting, { kind: 'client', id: forClientId }, { features }));
  });
}
