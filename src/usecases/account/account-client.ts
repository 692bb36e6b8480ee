import type { Client } from '../../domain/clients';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/**
 * The login client the account page signs in with (docs/account-page.md#linking-to-it): the one its
 * link names (`client_id`), else the application's setting `account_client_id`, else the
 * application's own: the first login client made with it that has a default flow (the one
 * `apps:create` and the first start make). Adding clients never leaves the page without one.
 */
export async function accountClient(services: Pick<Services, 'clients'>, app: Application, named?: unknown): Promise<Client | undefined> {
  const wanted = typeof named === 'string' && named.length <= 64 ? named : app.settings.account_client_id;
  if (wanted) {
    const client = await services.clients.find(app.id, wanted);
    return client?.features.includes('login_client') ? client : undefined;
  }
  const logins = await services.clients.list(app.id, ['login_client']);
  return logins.find((c) => c.settings.default_flow_name !== undefined) ?? logins[0];
}
