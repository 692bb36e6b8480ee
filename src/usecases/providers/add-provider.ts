import { event } from '../../domain/events';
import { ProviderNameError, providerRow, providerView, type NewProvider, type ProviderView } from '../../domain/social/providers';
import type { AdminCall, AdminDeps } from '../clients/deps';

/** Adds an identity provider to the application's social login (ProviderInputError, ProviderNameError when the name is taken). */
export async function addProvider(deps: AdminDeps, command: AdminCall & { provider: NewProvider }): Promise<ProviderView> {
  const row = providerRow(deps.box, command.applicationId, command.provider);
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    if (!(await deps.db.social.providers.insert(row, now, uow.tx))) {
      throw new ProviderNameError(`the application already has a provider named ${row.name}; remove it first`);
    }
    uow.record(event('provider.added', command.applicationId, now, command.acting, { kind: 'provider', id: row.name }, { kind: row.kind }));
    return providerView({ ...row, id: 0 });
  });
}
