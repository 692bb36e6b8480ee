import { randomUUID } from 'node:crypto';
import { accountOf, type DomainEvent } from '../../domain/events';
import type { OutboxJob, OutboxPayloads } from '../../domain/storage/outbox';
import type { EndpointSubscription, WebhookStore } from '../../domain/storage/webhooks';
import { CATCH_UP_AFTER_MS, REFRESH_MS, STALE_AFTER_MS, subscribes, WEBHOOK_JOBS, WEBHOOK_TYPE_OF } from '../../domain/webhooks';
import type { Subscriber } from './subscriber';

/**
 * Which applications' events any endpoint wants, as this process last read it: what lets an event
 * of an application without endpoints cost nothing (no outbox row, no job). Read again when asked
 * and older than REFRESH_MS, and at once after a change to an endpoint here; before the first read,
 * when the last one is older than STALE_AFTER_MS (an idle process) and when reads fail, every
 * event is wanted. An endpoint added on another process is known here within REFRESH_MS, and the
 * events of those seconds are read back from the store for it (the `catch-up` job).
 */
export interface WebhookSubscriptions {
  wants(applicationId: number, type: string): boolean;
  refresh(): Promise<void>;
  close(): void;
}

export function watchWebhookSubscriptions(store: Pick<WebhookStore, 'listSubscriptions'>, options: { everyMs?: number; now?: () => number } = {}): WebhookSubscriptions {
  const now = options.now ?? Date.now;
  const everyMs = options.everyMs ?? REFRESH_MS;
  let known: Map<number, EndpointSubscription['types'][]> | undefined;
  let readAt = 0;
  let closed = false;
  let reading: Promise<void> | undefined;
  // reads in the order they started: one that started earlier never replaces what a later one read
  let started = 0;
  let applied = 0;
  const read = (n = ++started) => (closed ? Promise.resolve() : store.listSubscriptions().then((all) => {
    if (n < applied) return;
    applied = n;
    const next = new Map<number, EndpointSubscription['types'][]>();
    for (const s of all) next.set(s.applicationId, [...(next.get(s.applicationId) ?? []), s.types]);
    known = next;
    readAt = now();
  }).catch(() => undefined));
  // read when asked and older than everyMs (no timer: an idle process reads nothing, and holds nothing alive)
  const refresh = () => (reading ??= read().finally(() => (reading = undefined)));
  void refresh();
  return {
    wants(applicationId, type) {
      const age = now() - readAt;
      if (age > everyMs) void refresh();
      // never read, or not for a while: every event is wanted until a read says otherwise
      if (!known || age > STALE_AFTER_MS) return true;
      return (known.get(applicationId) ?? []).some((types) => subscribes(types, type));
    },
    // after a change here: a read that starts now (one in flight may have begun before it committed)
    refresh: () => read(),
    close: () => {
      closed = true;
    },
  };
}

/** The job of an endpoint's event: named after it, for the event `e`. The payload is typed as the queue's, so a misspelt member does not compile. */
const jobFor = (e: DomainEvent, name: string, payload: OutboxPayloads['webhooks'], entityId?: number): OutboxJob => ({
  id: randomUUID(), applicationId: e.applicationId, queue: 'webhooks', name, payload, eventId: e.eventId, ...(entityId !== undefined && { entityId }),
});

/**
 * Webhooks (docs/webhooks.md): an event some endpoint of its application wants leaves one outbox
 * row (the fan-out, written with the change), with the account's public id when the change carried
 * it (a deletion's record is gone by the time the row is taken); a new or enabled endpoint's
 * catch-up, a ping, and deliveries queued again leave theirs. After a change to an endpoint this process reads the
 * subscriptions again.
 */
export function webhooks(subscriptions: Pick<WebhookSubscriptions, 'wants' | 'refresh'>): Subscriber {
  return {
    name: 'webhooks',
    jobs(e: DomainEvent): OutboxJob[] {
      if (e.type === 'webhook.added' || e.type === 'webhook.enabled') {
        return [jobFor(e, WEBHOOK_JOBS.catchUp, { endpoint: e.subject.id, notBefore: new Date(e.occurredAt.getTime() + CATCH_UP_AFTER_MS).toISOString() })];
      }
      if (e.type === 'webhook.tested') return [jobFor(e, WEBHOOK_JOBS.fanOut, { endpoint: e.subject.id })];
      if (e.type === 'webhook.redelivered') return [jobFor(e, WEBHOOK_JOBS.deliver, { endpoint: e.subject.id })];
      const type = WEBHOOK_TYPE_OF[e.type];
      if (type === null || !subscriptions.wants(e.applicationId, type)) return [];
      const uuid = e.carried?.snapshot?.uuid ?? e.carried?.erasure?.needles.uuids[0];
      return [jobFor(e, WEBHOOK_JOBS.fanOut, { type, ...(uuid !== undefined && { uuid }) }, accountOf(e))];
    },
    async afterCommit(events) {
      if (events.some((e) => e.type.startsWith('webhook.'))) await subscriptions.refresh();
    },
  };
}
