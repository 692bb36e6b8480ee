import { event } from '../../domain/events';
import type { StoredEndpoint } from '../../domain/storage/webhooks';
import type { Services } from '../services';

/**
 * What the webhooks worker changes about an endpoint (docs/webhooks.md#deliveries), each with its
 * event, made by Gatehouse itself: an endpoint whose receiver answered 410 Gone is removed; one
 * whose every attempt failed for days is disabled, and the application's owner (`owner_email`)
 * is told by email.
 */

type Deps = Pick<Services, 'clock' | 'db' | 'work'>;
const system = { actor: { kind: 'system' as const }, origin: {} };

/** Removes an endpoint its receiver said is gone (410). */
export async function removeGoneEndpoint(deps: Deps, command: { endpoint: StoredEndpoint }): Promise<void> {
  const { endpoint } = command;
  await deps.work.run(async (uow) => {
    if (!(await deps.db.webhooks.remove(endpoint.applicationId, endpoint.endpointId, uow.tx))) return;
    uow.record(event('webhook.removed', endpoint.applicationId, deps.clock.now(), system, { kind: 'webhook', id: endpoint.endpointId }, { reason: 'gone' }));
  });
}

/** Disables an endpoint that failed for days, and writes to the application's owner where it names one. */
export async function disableFailingEndpoint(deps: Deps, command: { endpoint: StoredEndpoint }): Promise<void> {
  const { endpoint } = command;
  const app = await deps.db.applications.findById(endpoint.applicationId);
  if (!app) return;
  await deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const current = await deps.db.webhooks.find(app.id, endpoint.endpointId, uow.tx);
    // enabled again, or already disabled, meanwhile: nothing to do
    if (!current || current.disabledAt || !current.failingSince) return;
    await deps.db.webhooks.setDisabled(app.id, endpoint.endpointId, now, now, 0, uow.tx);
    const owner = app.settings.owner_email;
    uow.record(event('webhook.disabled', app.id, now, system, { kind: 'webhook', id: endpoint.endpointId }, { reason: 'failing' }, owner ? {
      mail: { app, template: 'webhook-disabled', locale: 'en-US', to: owner, name: owner.split('@')[0], endpointUrl: endpoint.url },
    } : undefined));
  });
}
