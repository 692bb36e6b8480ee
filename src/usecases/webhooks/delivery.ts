import type { Services } from '../services';
import type { WebhookTransport } from '../../domain/ports';
import type { StoredDelivery, StoredEndpoint } from '../../domain/storage/webhooks';
import { renderUser } from '../../domain/users';
import type { WebhookBody } from '../../domain/webhooks';
import { disableFailingEndpoint, removeGoneEndpoint } from './deliveries';

/**
 * Webhook deliveries (docs/webhooks.md#deliveries), the state machine the webhooks worker runs. A
 * delivery is taken by one worker at a time (a lease on it, so a worker that dies mid-attempt
 * leaves it due again), signed with the endpoint's live secrets and sent; 2xx delivered, 410 the
 * endpoint removed, anything else tried again after a doubling wait until RETRY_FOR_MS has passed
 * since it was made (or sent again). An account's deliveries to an endpoint go one after another,
 * in the event store's order. An endpoint whose every attempt failed for days is disabled, and
 * the application's owner told.
 */

export { RETRY_FOR_MS } from '../../domain/webhooks';
/** The first wait after a failure, doubled each time, and the longest wait. */
export const FIRST_WAIT_MS = 5_000;
export const LONGEST_WAIT_MS = 3600_000;
/** How long a worker holds a delivery it sends (past the 10 s an attempt may take): another sends it after that. */
export const LEASE_MS = 30_000;
/** An endpoint whose every attempt failed for this long is disabled, and the application's owner told. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000;

/** How long a new (or enabled again) endpoint's deliveries wait at most for its first seconds to be read back. */
export const CATCH_UP_WAIT_MS = 10 * 60_000;

/** When a delivery that failed its `attempts`-th time is tried next. */
export const nextAttemptAfter = (attempts: number, now: Date): Date => new Date(now.getTime() + Math.min(FIRST_WAIT_MS * 2 ** Math.max(0, attempts - 1), LONGEST_WAIT_MS));

/** What the deliverer reports to the metrics. */
export interface DeliveryWatch { attempted(endpoint: string, outcome: 'delivered' | 'retried' | 'failed', seconds: number): void }

export interface WebhookDeliverer {
  /** Sends what is due to `endpoints` (ids; those failing are left to the recurring run), or to every endpoint with something due. */
  deliverDue(now: () => Date, endpoints?: number[]): Promise<{ delivered: number; failed: number }>;
}

export function createWebhookDeliverer(deps: {
  services: Pick<Services, 'db' | 'box' | 'logger' | 'work' | 'clock'>;
  /** Sends a delivery (HTTP, in the workers). */
  transport: WebhookTransport;
  watch?: DeliveryWatch;
  /** Deliveries sent at once to one endpoint (its accounts' orders kept). */
  perEndpoint?: number;
  /** Endpoints served at once. */
  endpointsAtOnce?: number;
  /** How long one run keeps sending what becomes due. */
  runForMs?: number;
}): WebhookDeliverer {
  const { db, box, logger } = deps.services;
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
    const result = await deps.transport.send({ url: e.url, secrets: secretsOf(e, now), messageId: d.messageId, at: now, body });
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
        if (states.includes('gone')) return await removeGoneEndpoint(deps.services, { endpoint });
        // the endpoint's row written only when it turns failing or recovers, not on every delivery
        if (states.includes('delivered') && endpoint.failingSince) await db.webhooks.markFailingAlone(endpoint.id, null);
        if (!states.includes('delivered') && !endpoint.failingSince) await db.webhooks.markFailingAlone(endpoint.id, at);
        if (!states.includes('delivered')) {
          // every attempt failed: the endpoint is retried later; after days of nothing but failures it is disabled
          if (endpoint.failingSince && at.getTime() - endpoint.failingSince.getTime() >= DISABLE_AFTER_MS) await disableFailingEndpoint(deps.services, { endpoint });
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
