import { event, type Acting } from '../../domain/events';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredEndpoint } from '../../domain/storage/webhooks';
import { messageIdOf, newEndpointId, newWebhookSecret, subscriptionProblem, webhookUrlProblem, type Subscription } from '../../domain/webhooks';
import type { Services } from '../services';

/**
 * An application's webhook endpoints (docs/webhooks.md#endpoints), for its owner clients and the
 * operators: each change one use case, recorded as an event (the audit log names who made it).
 * Secrets are sealed at rest and shown once, when made.
 */

/** How long the previous secret signs too after a rotation. */
export const PREVIOUS_SECRET_SECONDS = 24 * 3600;

/** The longest description. */
export const MAX_DESCRIPTION = 200;

/** At most this many endpoints per application. */
export const MAX_ENDPOINTS = 20;

/** An endpoint as its owner sees it: never its secret. */
export interface EndpointView {
  id: string; url: string; events: Subscription; description: string; includeRecord: boolean; createdAt: Date; disabledAt: Date | null;
  /** Since when every attempt has failed, if so. */
  failingSince: Date | null;
}

export const endpointView = (e: StoredEndpoint): EndpointView => ({
  id: e.endpointId, url: e.url, events: e.types, description: e.description, includeRecord: e.includeRecord, createdAt: e.createdAt, disabledAt: e.disabledAt,
  failingSince: e.failingSince,
});

type Deps = Pick<Services, 'box' | 'clock' | 'db' | 'webhooks' | 'work'>;

/** Adds an endpoint: answers it and its secret (`whsec_…`), shown this once. */
export async function addWebhook(
  deps: Deps, command: { app: Application; acting: Acting; url: string; types: readonly string[]; description?: string; includeRecord?: boolean },
): Promise<{ endpoint: EndpointView; secret: string }> {
  const urlProblem = webhookUrlProblem(command.url, deps.webhooks.allowPrivate);
  if (urlProblem) throw invalidField('url', urlProblem);
  const typesProblem = subscriptionProblem(command.types);
  if (typesProblem) throw invalidField('events', typesProblem);
  const description = (command.description ?? '').trim();
  if (description.length > MAX_DESCRIPTION) throw invalidField('description', `is longer than ${MAX_DESCRIPTION} characters`);
  const types: Subscription = command.types.includes('*') ? '*' : [...new Set(command.types)].sort();
  const secret = newWebhookSecret();
  const endpointId = newEndpointId();
  const endpoint = await deps.work.run(async (uow) => {
    // counted under the application's row, claimed (written) first: parallel adds never pass the limit
    await deps.db.applications.claim(command.app.id, deps.clock.now(), uow.tx);
    if ((await deps.db.webhooks.list(command.app.id)).length >= MAX_ENDPOINTS) {
      throw new Refusal('invalid', `an application has at most ${MAX_ENDPOINTS} webhook endpoints; remove one first`, { field: 'url' });
    }
    const now = deps.clock.now();
    const stored = await deps.db.webhooks.insert({
      applicationId: command.app.id, endpointId, url: command.url, types: types === '*' ? '*' : [...types], description,
      includeRecord: command.includeRecord === true, secretSealed: deps.box.seal(secret, endpointId),
      // where its first seconds are read back from, for the processes that learn of it a moment later
      eventsFrom: await deps.db.events.findNewestId(),
    }, now, uow.tx);
    uow.record(event('webhook.added', command.app.id, now, command.acting, { kind: 'webhook', id: endpointId }, {
      host: new URL(command.url).host, types: types === '*' ? '*' : [...types], includeRecord: stored.includeRecord,
    }));
    return stored;
  });
  return { endpoint: endpointView(endpoint), secret };
}

/** The application's endpoints, oldest first. */
export async function listWebhooks(deps: Pick<Services, 'db'>, command: { app: Application }): Promise<EndpointView[]> {
  return (await deps.db.webhooks.list(command.app.id)).map(endpointView);
}

const unknownEndpoint = () => invalidField('id', 'is not a webhook endpoint of this application (/webhooks/list names them)');

/** Removes an endpoint: nothing more is delivered to it. */
export async function removeWebhook(deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; endpointId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    if (!(await deps.db.webhooks.remove(command.app.id, command.endpointId, uow.tx))) throw unknownEndpoint();
    uow.record(event('webhook.removed', command.app.id, deps.clock.now(), command.acting, { kind: 'webhook', id: command.endpointId }, {}));
  });
}

/** A new secret for an endpoint, shown this once; the previous one signs too for PREVIOUS_SECRET_SECONDS. */
export async function rotateWebhookSecret(
  deps: Pick<Services, 'box' | 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; endpointId: string },
): Promise<{ secret: string; previousUntil: Date }> {
  const secret = newWebhookSecret();
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const previousUntil = new Date(now.getTime() + PREVIOUS_SECRET_SECONDS * 1000);
    if (!(await deps.db.webhooks.rotateSecret(command.app.id, command.endpointId, deps.box.seal(secret, command.endpointId), previousUntil, now, uow.tx))) throw unknownEndpoint();
    uow.record(event('webhook.secret_rotated', command.app.id, now, command.acting, { kind: 'webhook', id: command.endpointId }, { previousUntil: previousUntil.toISOString() }));
    return { secret, previousUntil };
  });
}

/** A delivery as the endpoint's owner sees it: what, when, how it went; the receiver's first bytes. */
export interface DeliveryView {
  id: number; messageId: string; type: string; state: string; attempts: number; nextAttemptAt: Date; lastAttemptAt: Date | null;
  lastStatus: number | null; lastMs: number | null; lastAnswer: string | null; createdAt: Date;
}

/** The most deliveries /webhooks/deliveries answers. */
export const MAX_DELIVERIES = 100;

/** An endpoint's latest deliveries, newest first. */
export async function listDeliveries(deps: Pick<Services, 'db'>, command: { app: Application; endpointId: string; limit?: number }): Promise<DeliveryView[]> {
  const endpoint = await deps.db.webhooks.find(command.app.id, command.endpointId);
  if (!endpoint) throw unknownEndpoint();
  const limit = Math.min(MAX_DELIVERIES, Math.max(1, command.limit ?? 20));
  return (await deps.db.webhooks.listDeliveries(command.app.id, endpoint.id, limit)).map((d) => ({
    id: d.id, messageId: d.messageId, type: d.type, state: d.state, attempts: d.attempts, nextAttemptAt: d.nextAttemptAt, lastAttemptAt: d.lastAttemptAt,
    lastStatus: d.lastStatus, lastMs: d.lastMs, lastAnswer: d.lastAnswer, createdAt: d.createdAt,
  }));
}

/** A `ping` for an endpoint (/webhooks/test): delivered like any event, beside the others (it waits behind none). Answers its message id. */
export async function pingWebhook(deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; endpointId: string }): Promise<string> {
  return deps.work.run(async (uow) => {
    const endpoint = await deps.db.webhooks.find(command.app.id, command.endpointId, uow.tx);
    if (!endpoint) throw unknownEndpoint();
    const tested = event('webhook.tested', command.app.id, deps.clock.now(), command.acting, { kind: 'webhook', id: endpoint.endpointId }, {});
    uow.record(tested);
    return messageIdOf(tested.eventId);
  });
}

/** Disables an endpoint (nothing is sent to it; its deliveries wait) or enables it again (they go out). */
export async function setWebhookEnabled(
  deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; endpointId: string; enabled: boolean },
): Promise<void> {
  await deps.work.run(async (uow) => {
    const now = deps.clock.now();
    // enabled again: it gets events from now on, its first seconds read back as a new endpoint's are
    if (!(await deps.db.webhooks.setDisabled(command.app.id, command.endpointId, command.enabled ? null : now, now, await deps.db.events.findNewestId(), uow.tx))) throw unknownEndpoint();
    const subject = { kind: 'webhook' as const, id: command.endpointId };
    uow.record(command.enabled ? event('webhook.enabled', command.app.id, now, command.acting, subject, {})
      : event('webhook.disabled', command.app.id, now, command.acting, subject, { reason: 'operator' }));
  });
}

/**
 * Sends deliveries again: one (`deliveryId`, whatever became of it), or every delivery of the
 * endpoint given up since `since`. They keep their message ids, so a receiver that had one already
 * knows it. Answers how many were queued.
 */
export async function redeliverWebhooks(
  deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; endpointId: string } & ({ deliveryId: number } | { since: Date }),
): Promise<number> {
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const endpoint = await deps.db.webhooks.find(command.app.id, command.endpointId, uow.tx);
    if (!endpoint) throw unknownEndpoint();
    let count: number;
    if ('deliveryId' in command) {
      const delivery = await deps.db.webhooks.findDelivery(command.app.id, command.deliveryId);
      if (!delivery || delivery.endpointId !== endpoint.id) throw invalidField('delivery', 'is not a delivery of this endpoint (/webhooks/deliveries lists them)');
      count = (await deps.db.webhooks.resend(command.app.id, command.deliveryId, now, uow.tx)) ? 1 : 0;
    } else {
      if (command.since.getTime() > now.getTime()) throw invalidField('since', 'is in the future: give the time from which deliveries given up are sent again');
      count = await deps.db.webhooks.replayFailed(endpoint.id, command.since, now, uow.tx);
    }
    uow.record(event('webhook.redelivered', command.app.id, now, command.acting, { kind: 'webhook', id: endpoint.endpointId }, {
      count, ...('deliveryId' in command ? { delivery: command.deliveryId } : { since: command.since.toISOString() }),
    }));
    return count;
  });
}
