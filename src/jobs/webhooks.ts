import type { Storage } from '../domain/storage';
import type { StoredEvent } from '../domain/storage/events';
import type { SecretBox } from '../domain/secrets';
import type { OutboxJob } from '../domain/storage/outbox';
import type { NewDelivery, StoredDelivery, StoredEndpoint } from '../domain/storage/webhooks';
import { renderUser } from '../domain/users';
import { CATCH_UP_AFTER_MS, messageIdOf, subscribes, WEBHOOK_JOBS, WEBHOOK_TYPE_OF, webhookBody, type WebhookBody } from '../domain/webhooks';
import type { Logger } from '../logger';
import type { Job, JobContext } from '../queue/port';
import { accountOf } from '../domain/events';
import { send, signatureHeaders, type Attempt } from './webhook-sender';

/**
 * The webhooks queue (docs/webhooks.md#deliveries). An event some endpoint wants leaves a fan-out
 * row with its change; the job of that row makes one delivery per endpoint subscribed to it, for
 * its row and the other pending ones (a batch read and written at once: one transaction marks the
 * rows done and inserts their deliveries), then sends what is due. A delivery is taken by one
 * worker at a time (a lease on it, so a worker that dies mid-attempt leaves it due again), signed
 * with the endpoint's live secrets and sent; 2xx delivered, 410 the endpoint removed, anything else
 * tried again after a doubling wait until RETRY_FOR_MS has passed since it was made (or sent again). An account's
 * deliveries to an endpoint go one after another, in the event store's order. A recurring job
 * sends what is due (the retries, and everything after Redis lost its jobs).
 */

export { RETRY_FOR_MS } from '../domain/webhooks';
/** The first wait after a failure, doubled each time, and the longest wait. */
export const FIRST_WAIT_MS = 5_000;
export const LONGEST_WAIT_MS = 3600_000;
/** How long a worker holds a delivery it sends (past the 10 s an attempt may take): another sends it after that. */
export const LEASE_MS = 30_000;
/** An endpoint whose every attempt failed for this long is disabled, and the application's owner told. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000;

/** How long a new (or enabled again) endpoint's deliveries wait at most for its first seconds to be read back. */
export const CATCH_UP_WAIT_MS = 10 * 60_000;

/** How many pending events one fan-out job fans out at most, in one transaction. */
export const FAN_OUT_BATCH = 100;

/** When a delivery that failed its `attempts`-th time is tried next. */
export const nextAttemptAfter = (attempts: number, now: Date): Date => new Date(now.getTime() + Math.min(FIRST_WAIT_MS * 2 ** Math.max(0, attempts - 1), LONGEST_WAIT_MS));

/** What the deliverer changes through use cases (each with its event): an endpoint whose receiver is gone, or that failed for days. */
export interface EndpointChanges {
  gone(endpoint: StoredEndpoint): Promise<void>;
  failing(endpoint: StoredEndpoint): Promise<void>;
}

/** What the deliverer reports to the metrics. */
export interface DeliveryWatch { attempted(endpoint: string, outcome: 'delivered' | 'retried' | 'failed', seconds: number): void }

export interface WebhookDeliverer {
  /** Sends what is due to `endpoints` (ids; those failing are left to the recurring run), or to every endpoint with something due. */
  deliverDue(now: () => Date, endpoints?: number[]): Promise<{ delivered: number; failed: number }>;
}

export function createWebhookDeliverer(deps: {
  db: Storage; box: SecretBox; logger: Logger; allowPrivate: boolean; changes: EndpointChanges; watch?: DeliveryWatch;
  /** Deliveries sent at once to one endpoint (its accounts' orders kept). */
  perEndpoint?: number;
  /** Endpoints served at once. */
  endpointsAtOnce?: number;
  /** How long one run keeps sending what becomes due. */
  runForMs?: number;
}): WebhookDeliverer {
  const { db, box, logger } = deps;
  const perEndpoint = deps.perEndpoint ?? 16;
  const endpointsAtOnce = deps.endpointsAtOnce ?? 8;
  const runForMs = deps.runForMs ?? 20_000;

  /** The secrets that sign a delivery now: the current one, and the previous one during its overlap. */
  const secretsOf = (e: StoredEndpoint, now: Date): string[] => [
    box.open(e.secretSealed, e.endpointId),
    ...(e.previousSecretSealed && e.previousUntil && e.previousUntil > now ? [box.open(e.previousSecretSealed, e.endpointId)] : []),
  ];

  /** The body as sent: with the account's record as it is now, for an endpoint that asked for it. */
  async function bodyOf(e: StoredEndpoint, d: StoredDelivery): Promise<string> {
    if (!e.includeRecord || d.accountId === null || !d.type.startsWith('user.')) return d.payload;
    const body = JSON.parse(d.payload) as WebhookBody;
    const [record] = await db.records.findByIds(d.applicationId, [d.accountId]);
    return JSON.stringify({ ...body, data: { ...body.data, record: record ? renderUser(record) : null } });
  }

  async function attempt(e: StoredEndpoint, d: StoredDelivery, claim: string, now: Date): Promise<'delivered' | 'failed' | 'pending' | 'gone'> {
    const body = await bodyOf(e, d);
    const result: Attempt = await send(e.url, signatureHeaders(secretsOf(e, now), d.messageId, now, body), body, { allowPrivate: deps.allowPrivate });
    const status = result.kind === 'answered' ? result.status : null;
    const ok = status !== null && status >= 200 && status < 300;
    const givenUp = !ok && now.getTime() >= d.giveUpAt.getTime();
    const state = ok ? 'delivered' : givenUp ? 'failed' : 'pending';
    // an erased account's uuid is kept until its erasure is delivered (or given up), no longer
    const forgotten = (ok || givenUp) && d.type === 'user.erased' ? JSON.stringify({ ...(JSON.parse(d.payload) as WebhookBody), data: { user_id: null } }) : undefined;
    await db.webhooks.recordAttemptAlone(d.id, {
      claim, status, ms: Math.round(result.ms), answer: result.kind === 'answered' ? result.answer : result.reason, state,
      nextAttemptAt: ok || givenUp ? now : nextAttemptAfter(d.attempts + 1, now), ...(forgotten !== undefined && { payload: forgotten }),
    }, now);
    deps.watch?.attempted(e.endpointId, ok ? 'delivered' : givenUp ? 'failed' : 'retried', result.ms / 1000);
    if (status === 410) return 'gone';
    if (!ok) logger.info({ endpoint: e.endpointId, delivery: d.id, status, attempts: d.attempts + 1, given_up: givenUp }, 'a webhook delivery failed');
    return state;
  }

  /** The endpoints this process sends to now, each by one lane: another call for one of them asks that lane to look once more. */
  const serving = new Map<number, { again: boolean }>();

  /**
   * Sends one endpoint's due deliveries, batch after batch, until none is due or the run's time is
   * up; one lane per endpoint in this process (a slow receiver holds one job, not every one). A
   * failing endpoint is left to the recurring run unless `failing` says to serve it; a new (or
   * enabled again) endpoint waits for its first seconds to be read back.
   */
  async function serve(endpointKey: number, now: () => Date, until: number, totals: { delivered: number; failed: number }, failing: boolean): Promise<void> {
    const lane = serving.get(endpointKey);
    if (lane) {
      lane.again = true;
      return;
    }
    const mine = { again: false };
    serving.set(endpointKey, mine);
    try {
      while (Date.now() < until) {
        const at = now();
        const endpoint = await db.webhooks.findByKey(endpointKey);
        if (!endpoint || endpoint.disabledAt || (endpoint.failingSince && !failing)) return;
        if (endpoint.eventsFrom !== null && at.getTime() < endpoint.listeningSince.getTime() + CATCH_UP_WAIT_MS) return;
        const { due, others } = await db.webhooks.listDueDeliveries(endpointKey, at, perEndpoint);
        const { claim, ids } = await db.webhooks.claimAlone(due.map((d) => d.id), at, new Date(at.getTime() + LEASE_MS));
        const taken = due.filter((d) => ids.includes(d.id));
        if (taken.length === 0) {
          if (mine.again) {
            mine.again = false;
            continue;
          }
          return;
        }
        const states = await Promise.all(taken.map((d) => attempt(endpoint, d, claim, now())));
        totals.delivered += states.filter((s) => s === 'delivered').length;
        totals.failed += states.filter((s) => s !== 'delivered').length;
        if (states.includes('gone')) return await deps.changes.gone(endpoint);
        // the endpoint's row written only when it turns failing or recovers, not on every delivery
        if (states.includes('delivered') && endpoint.failingSince) await db.webhooks.markFailingAlone(endpoint.id, null);
        if (!states.includes('delivered') && !endpoint.failingSince) await db.webhooks.markFailingAlone(endpoint.id, at);
        if (!states.includes('delivered')) {
          // every attempt failed: the endpoint is retried later; after days of nothing but failures it is disabled
          if (endpoint.failingSince && at.getTime() - endpoint.failingSince.getTime() >= DISABLE_AFTER_MS) await deps.changes.failing(endpoint);
          return;
        }
        // nothing else was pending and no one asked for another look: nothing can have become due
        if (others === 0 && !mine.again) return;
        mine.again = false;
      }
    } finally {
      serving.delete(endpointKey);
    }
  }

  return {
    async deliverDue(now, endpoints) {
      const totals = { delivered: 0, failed: 0 };
      const until = Date.now() + runForMs;
      // the recurring run serves every endpoint with something due, failing ones too (the longest due first)
      const failing = endpoints === undefined;
      const queue = endpoints ?? await db.webhooks.listDueEndpoints(now(), 1000);
      // endpoints side by side, a few at a time: a slow one holds up only its own deliveries
      const lanes = Array.from({ length: Math.min(endpointsAtOnce, queue.length) }, async () => {
        for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
          await serve(next, now, until, totals, failing).catch((err: Error) => logger.warn({ endpoint: next, err: err.message }, 'sending webhooks failed; they are tried again'));
        }
      });
      await Promise.all(lanes);
      return totals;
    },
  };
}

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The webhooks queue's jobs: fan-out (an event's deliveries), catch-up (a new endpoint's first seconds), deliver (what is due). */
export function createWebhooksProcessor(deps: { db: Storage; deliverer: WebhookDeliverer; logger: Logger; now?: () => Date }) {
  const { db, deliverer } = deps;
  const now = deps.now ?? (() => new Date());

  /** The deliveries of a batch of fan-out rows: their events, their applications' endpoints, their accounts' public ids, read once for the batch. */
  async function deliveriesFor(rows: OutboxJob[]): Promise<Map<string, NewDelivery[]>> {
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
      if (typeof r.payload.uuid === 'string') uuids.set(key(r.applicationId, account), r.payload.uuid);
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
      const e = r.eventId === undefined ? undefined : events.get(r.eventId);
      if (!e) return [[r.id, []]];
      const account = accountOf(e);
      try {
        return [[r.id, deliveriesOf(e, endpoints.get(r.applicationId) ?? [], account === undefined ? undefined : uuids.get(key(r.applicationId, account)),
          typeof r.payload.endpoint === 'string' ? r.payload.endpoint : undefined)]];
      } catch (err) {
        deps.logger.warn({ outboxId: r.id, err: (err as Error).message }, 'a webhooks event could not be fanned out; its job tries again');
        return [];
      }
    }));
  }

  /** A fan-out job: its row and other pending ones, fanned out in one transaction; then what they made is sent. */
  async function fanOut(outboxId: string): Promise<Record<string, unknown>> {
    let made = true;
    const { own, held, deliveries } = await db.webhooks.fanOutBatchAlone(outboxId, FAN_OUT_BATCH, async (rows) => {
      const byRow = await deliveriesFor(rows);
      made = byRow.has(outboxId);
      return byRow;
    }, now());
    if (!made) throw new Error('this event could not be fanned out (see the warning before); it is tried again');
    // its row held by another transaction (a batch of another worker, a Galera node applying its
    // insert): that one may end without it, and a job done here would be the row's last (the relay's
    // jobs of the same id are dropped as repeats), so this one runs again
    if (held) throw new Error('its outbox row is held by another transaction; it is tried again');
    if (!own) return { skipped: 'fanned out already' };
    const sent = deliveries.length === 0 ? { delivered: 0, failed: 0 } : await deliverer.deliverDue(now, [...new Set(deliveries.map((d) => d.endpointId))]);
    return { deliveries: deliveries.length, ...sent };
  }

  /**
   * A new endpoint's first seconds: the events of its application since it was added that no
   * fan-out made a delivery of for it (a process that had not read of it yet), read back from the
   * event store once every process knows of it.
   */
  async function catchUp(outboxId: string): Promise<Record<string, unknown>> {
    const row = await db.outbox.find(outboxId);
    if (!row || row.status !== 'pending') return { skipped: 'caught up already' };
    const endpoint = typeof row.payload.endpoint === 'string' ? await db.webhooks.find(row.applicationId, row.payload.endpoint) : undefined;
    if (!endpoint || endpoint.eventsFrom === null) {
      await db.webhooks.fanOutAlone(outboxId, [], now());
      return { skipped: endpoint ? 'caught up already' : 'no such endpoint' };
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
    if (!(await db.webhooks.fanOutAlone(outboxId, deliveries, now(), endpoint.id))) return { skipped: 'caught up already' };
    return { deliveries: deliveries.length, ...(await deliverer.deliverDue(now, [endpoint.id])) };
  }

  return async (job: Job, _context: JobContext): Promise<Record<string, unknown>> => {
    const outboxId = String(job.data.outboxId ?? job.id);
    switch (job.name) {
      case WEBHOOK_JOBS.fanOut: return fanOut(outboxId);
      case WEBHOOK_JOBS.catchUp: return catchUp(outboxId);
      case WEBHOOK_JOBS.deliver: {
        // queued for one endpoint (its deliveries queued again), or the recurring run for all
        const row = job.data.outboxId === undefined ? undefined : await db.outbox.find(outboxId);
        if (row?.status === 'pending') await db.outbox.completeAlone(outboxId, now());
        const endpoint = typeof row?.payload.endpoint === 'string' ? await db.webhooks.find(row.applicationId, row.payload.endpoint) : undefined;
        return deliverer.deliverDue(now, endpoint ? [endpoint.id] : undefined);
      }
      default: throw new Error(`the webhooks queue has no job named "${job.name}"`);
    }
  };
}
