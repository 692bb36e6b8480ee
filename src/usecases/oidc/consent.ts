import { event, recordSubject, type Origin } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import type { Services } from '../services';

/**
 * Whether an app's sign-in shows the consent page (docs/openid-connect.md#consent): a login client
 * is one of the application's own apps, so its consent is implied unless its setting
 * `consent_page` is `on`; then the person is asked for the scopes not granted yet.
 */
export const consentAsked = (client: Pick<Client, 'settings'>): boolean => client.settings.consent_page === 'on';

/**
 * The person refused an app the scopes it asked for on the consent page: the event says which
 * (`oidc.consent_refused`); the app is told `access_denied`. (A consent given is the grant saved,
 * `oidc.grant_given`, by the provider's adapter.)
 */
export async function refuseConsent(
  deps: Pick<Services, 'db' | 'clock' | 'work'>,
  command: { app: Application; accountUuid: string; client: Pick<Client, 'clientId'>; scopes: string[]; origin: Origin },
): Promise<void> {
  const { db, clock, work } = deps;
  const record = await db.records.find(command.app.id, { uuid: command.accountUuid });
  if (!record) return;
  await work.run(async (uow) => {
    uow.record(event('oidc.consent_refused', command.app.id, clock.now(), {
      actor: { kind: 'account', accountId: record.id, clientId: command.client.clientId }, origin: command.origin,
    }, recordSubject(record.id), { scopes: command.scopes }));
  });
}
