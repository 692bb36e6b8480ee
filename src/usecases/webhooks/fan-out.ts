import type { StoredEvent } from '../../domain/storage/events';
import { accountOf } from '../../domain/events';
import { webhookPayloadOf } from '../../domain/payloads';
import type { StoredOutboxJob } from '../../domain/storage/outbox';
import type { NewDelivery, StoredEndpoint } from '../../domain/storage/webhooks';
import { CATCH_UP_AFTER_MS, messageIdOf, subscribes, WEBHOOK_TYPE_OF, webhookBody } from '../../domain/webhooks';
import type { Services } from '../services';
import type { WebhookDeliverer } from './delivery';

/**
 * An event's webhooks (docs/webhooks.md#deliveries): an event some endpoint wants leaves a fan-out
 * row with its change; the fan-out makes one delivery per endpoint subscribed to it, for its row
 * and the other pending ones (a batch read and written at once: one transaction marks the rows
 * done and inserts their deliveries), then sends what is due. A new endpoint's first seconds are
 * read back from the event store (the catch-up); deliveries queued again are sent by `deliverQueued`.
 */

/** How many pending events one fan-out fans out at most, in one transaction. */
export const FAN_OUT_BATCH = 100;

type Deps = Pick<Services, 'db' | 'clock' | 'logger'> & { deliverer: WebhookDeliverer };

/** What a webhooks job came to: deliveries made and sent, or why there was nothing to do. */
export type WebhookJobResult =
  | { kind: 'sent'; deliveries?: number; delivered: number; failed: number }
  | { kind: 'skipped'; why: string };

/** An event type this release does not know (a newer release wrote it). */
export class UnknownEventTypeError extends Error {
  constructor(type: string) {
    super(`the event type ${JSON.stringify(type.slice(0, 64))} is not known to this release; a worker of the release that wrote it fans it out`);
  }
}

/** The deliveries of one event: one per enabled endpoint of its application subscribed to its type, added before it happened. */
export function deliveriesOf(e: StoredEvent, endpoints: readonly StoredEndpoint[], userId: string | undefined, only?: string): NewDelivery[] {
  const type = e.type === 'webhook.tested' ? 'ping' : WEBHOOK_TYPE_OF[e.type];
  // an event of a later release's (a rolling deploy): not this worker's to decide; its row waits for one that knows it
  if (type === undefined) throw new UnknownEventTypeError(e.type);
  if (type === null) return [];
  const body = e.type === 'webhook.tested'
    ? { type, timestamp: e.occurredAt.toISOString(), data: { endpoint: e.subject.id } }
    : webhookBody(e, type, userId);
  const account = e.type === 'webhook.tested' ? undefined : accountOf(e);
  return endpoints
    .filter((p) => (only !== undefined ? p.endpointId === only : !p.disabledAt && subscribes(p.types, type) && p.listeningSince <= e.occurredAt))
    .map((p) => ({
      applicationId: e.applicationId, endpointId: p.id, messageId: messageIdOf(e.eventId), type,
      // a ping waits behind nothing; an account's events go in order; the application's in theirs
      accountKey: e.type === 'webhook.tested' ? messageIdOf(e.eventId).slice(0, 32) : account !== undefined ? String(account) : 'app',
      accountId: account ?? null, eventSeq: e.type === 'webhook.tested' ? 0 : Number(e.id), payload: JSON.stringify(body),
    }));
}

/** The deliveries of a batch of fan-out rows: their events, their applications' endpoints, their accounts' public ids, read once for the batch. */
async function deliveriesFor(deps: Deps, rows: StoredOutboxJob[]): Promise<Map<string, NewDelivery[]>> {
  const { db } = deps;
  // a row whose payload is none of a webhooks job's is left out of the batch (its own job fails with why)
  const payloads = new Map(rows.flatMap((r) => {
    try {
      return [[r.id, webhookPayloadOf(r.payload)] as const];
    } catch (err) {
      deps.logger.warn({ outboxId: r.id, err: (err as Error).message }, 'a webhooks job cannot be read; its job tries again');
      return [];
    }
  }));
  const events = new Map((await db.events.findByUids(rows.flatMap((r) => (r.eventId === undefined ? [] : [r.eventId])))).map((e) => [e.eventId, e]));
  const endpoints = new Map<number, StoredEndpoint[]>();
  for (const app of new Set(rows.map((r) => r.applicationId))) endpoints.set(app, await db.webhooks.list(app));
  // an account's public id: carried by the row (a deletion's), else its record, else its tombstone
  const uuids = new Map<string, string>();
  const key = (app: number, id: number) => `${app}:${id}`;
  const unnamed = new Map<number, Set<number>>();
  for (const r of rows) {
    const e = r.eventId === undefined ? undefined : events.get(r.eventId);
    const account = e && accountOf(e);
    if (account === undefined) continue;
    const uuid = payloads.get(r.id)?.uuid;
    if (uuid !== undefined) uuids.set(key(r.applicationId, account), uuid);
    else unnamed.set(r.applicationId, (unnamed.get(r.applicationId) ?? new Set()).add(account));
  }
  for (const [app, ids] of unnamed) {
    const wanted = [...ids].filter((id) => !uuids.has(key(app, id)));
    for (const record of wanted.length === 0 ? [] : await db.records.findByIds(app, wanted)) uuids.set(key(app, record.id), record.uuid);
    for (const id of wanted.filter((i) => !uuids.has(key(app, i)))) {
      const uuid = await db.webhooks.findAccountUuid(app, id);
      if (uuid !== undefined) uuids.set(key(app, id), uuid);
    }
  }
  // a row whose deliveries cannot be made is left out of the batch: pending, for its own job to try again (and fail alone)
  return new Map(rows.flatMap((r): Array<[string, NewDelivery[]]> => {
    const payload = payloads.get(r.id);
    if (!payload) return [];
    const e = r.eventId === undefined ? undefined : events.get(r.eventId);
    if (!e) return [[r.id, []]];
    const account = accountOf(e);
    try {
      return [[r.id, deliveriesOf(e, endpoints.get(r.applicationId) ?? [], account === undefined ? undefined : uuids.get(key(r.applicationId, account)),
        payload.endpoint)]];
    } catch (err) {
      deps.logger.warn({ outboxId: r.id, err: (err as Error).message }, 'a webhooks event could not be fanned out; its job tries again');
      return [];
    }
  }));
}

/**
 * Fans out the event of the outbox row `outboxId`, with other pending ones, in one transaction;
 * then sends what they made. Throws when its row must be tried again (its event could not be
 * fanned out, or another transaction holds its row).
 */
export async function fanOut(deps: Deps, command: { outboxId: string }): Promise<WebhookJobResult> {
  const { db, clock, deliverer } = deps;
  const { outboxId } = command;
  const now = () => clock.now();
  let made = true;
  const { own, held, deliveries } = await db.webhooks.fanOutBatchAlone(outboxId, FAN_OUT_BATCH, async (rows) => {
    const byRow = await deliveriesFor(deps, rows);
    made = byRow.has(outboxId);
    return byRow;
  }, now());
  if (!made) throw new Error('this event could not be fanned out (see the warning before); it is tried again');
  // its row held by another transaction (a batch of another worker, a Galera node applying its
  // insert): that one may end without it, and a job done here would be the row's last (the relay's
  // jobs of the same id are dropped as repeats), so this one runs again
  if (held) throw new Error('its outbox row is held by another transaction; it is tried again');
  if (!own) return { kind: 'skipped', why: 'fanned out already' };
  const sent = deliveries.length === 0 ? { delivered: 0, failed: 0 } : await deliverer.deliverDue(now, [...new Set(deliveries.map((d) => d.endpointId))]);
  return { kind: 'sent', deliveries: deliveries.length, ...sent };
}

/**
 * A new endpoint's first seconds: the events of its application since it was added that no
 * fan-out made a delivery of for it (a process that had not read of it yet), read back from the
 * event store once every process knows of it.
 */
export async function catchUp(deps: Deps, command: { outboxId: string }): Promise<WebhookJobResult> {
  const { db, clock, deliverer } = deps;
  const { outboxId } = command;
  const now = () => clock.now();
  const row = await db.outbox.find(outboxId);
  if (!row || row.status !== 'pending') return { kind: 'skipped', why: 'caught up already' };
  const named = webhookPayloadOf(row.payload).endpoint;
  const endpoint = named === undefined ? undefined : await db.webhooks.find(row.applicationId, named);
  if (!endpoint || endpoint.eventsFrom === null) {
    await db.webhooks.fanOutAlone(outboxId, [], now());
    return { kind: 'skipped', why: endpoint ? 'caught up already' : 'no such endpoint' };
  }
  const since = endpoint.listeningSince;
  const wait = since.getTime() + CATCH_UP_AFTER_MS - now().getTime();
  if (wait > 0) await sleep(wait);
  // its first seconds only (every process knows of it after them); a few ids back: an event of another
  // process may have taken its id before the newest one was read
  const end = since.getTime() + CATCH_UP_AFTER_MS + 5_000;
  const deliveries: NewDelivery[] = [];
  for (let after = Math.max(0, endpoint.eventsFrom - 1_000), done = false; !done;) {
    const events = await db.events.listSince(endpoint.applicationId, after, since, 500);
    for (const e of events) {
      if (e.occurredAt.getTime() > end) {
        done = true;
        break;
      }
      // (one read back from before the newest id when it was added must have happened after it)
      if (Number(e.id) <= endpoint.eventsFrom && e.occurredAt.getTime() <= since.getTime()) continue;
      const type = WEBHOOK_TYPE_OF[e.type] ?? null;
      if (type === null || !subscribes(endpoint.types, type)) continue;
      const account = accountOf(e);
      // an erased account's deliveries were dropped with it (its erasure's own included, when it names no one any more)
      if (account !== undefined && e.type !== 'account.erased' && await db.erasures.erasedAt(e.applicationId, account)) continue;
      deliveries.push(...deliveriesOf(e, [endpoint], account === undefined ? undefined : await db.webhooks.findAccountUuid(e.applicationId, account)));
    }
    if (events.length < 500) done = true;
    else after = Number(events[events.length - 1].id);
  }
  if (!(await db.webhooks.fanOutAlone(outboxId, deliveries, now(), endpoint.id))) return { kind: 'skipped', why: 'caught up already' };
  return { kind: 'sent', deliveries: deliveries.length, ...(await deliverer.deliverDue(now, [endpoint.id])) };
}

/**
 * Sends what is due: for the endpoint of the outbox row `outboxId` (its deliveries queued again),
 * or, without a row, the recurring run for every endpoint.
 */
export async function deliverQueued(deps: Deps, command: { outboxId?: string }): Promise<WebhookJobResult> {
  const { db, clock, deliverer } = deps;
  const now = () => clock.now();
  const row = command.outboxId === undefined ? undefined : await db.outbox.find(command.outboxId);
  if (row?.status === 'pending') await db.outbox.completeAlone(row.id, now());
  const named = row && webhookPayloadOf(row.payload).endpoint;
  const endpoint = row && named !== undefined ? await db.webhooks.find(row.applicationId, named) : undefined;
  return { kind: 'sent', ...(await deliverer.deliverDue(now, endpoint ? [endpoint.id] : undefined)) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
