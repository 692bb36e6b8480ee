import { event } from '../../domain/events';
import { ProviderNameError } from '../../domain/social/providers';
import type { AdminCall, AdminDeps } from '../clients/deps';

/** Removes an identity provider (identities already linked stay linked); ProviderNameError when there is none of that name. */
export function removeProvider(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { name: string }): Promise<void> {
  return deps.work.run(async (uow) => {
    if (!(await deps.db.social.providers.remove(command.applicationId, command.name, uow.tx))) {
      throw new ProviderNameError(`no provider named ${command.name.slice(0, 64)} in this application`);
    }
    uow.record(event('provider.removed', command.applicationId, deps.clock.now(), command.acting, { kind: 'provider', id: command.name }, {}));
  });
}
