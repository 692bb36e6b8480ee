import type { Database } from '../db';
import type { SecretBox } from '../domain/secrets';
import type { StoredDelivery, StoredEndpoint } from '../domain/storage/webhooks';
import type { Logger } from '../logger';
import type { Job } from '../queue/port';
import { send, signatureHeaders, type Attempt } from './webhook-sender';

/**
 * The webhooks deliverer (docs/webhooks.md#deliveries), work in progress: for each endpoint with
 * deliveries due, its due deliveries in order (an account's one after another), each signed with
 * the endpoint's live secrets and sent; 2xx delivered, 410 the endpoint gone, anything else tried
 * again later with exponential waits until RETRY_FOR_MS has passed since the first attempt.
 */

/** How long a delivery is tried for before it is given up (at least a day). */
export const RETRY_FOR_MS = 26 * 3600_000;
/** The first wait after a failure, doubled each time, and the longest wait. */
export const FIRST_WAIT_MS = 5_000;
export const LONGEST_WAIT_MS = 3600_000;

/** When a delivery that failed its `attempts`-th time is tried next. */
export const nextAttemptAfter = (attempts: number, now: Date): Date => new Date(now.getTime() + Math.min(FIRST_WAIT_MS * 2 ** Math.max(0, attempts - 1), LONGEST_WAIT_MS));

export interface WebhookDeliverer { deliverDue(now: Date): Promise<{ delivered: number; failed: number }> }

export function createWebhookDeliverer(deps: {
  db: Database; box: SecretBox; logger: Logger; allowPrivate: boolean;
  /** Deliveries sent at once to one endpoint (its accounts' orders kept). */
  perEndpoint?: number;
}): WebhookDeliverer {
  const { db, box, logger } = deps;
  const perEndpoint = deps.perEndpoint ?? 10;

  /** The secrets that sign a delivery now: the current one, and the previous one during its overlap. */
  const secretsOf = (e: StoredEndpoint, now: Date): string[] => [
    box.open(e.secretSealed, e.endpointId),
    ...(e.previousSecretSealed && e.previousUntil && e.previousUntil > now ? [box.open(e.previousSecretSealed, e.endpointId)] : []),
  ];

  async function attempt(e: StoredEndpoint, d: StoredDelivery, now: Date): Promise<'delivered' | 'failed' | 'pending'> {
    const headers = signatureHeaders(secretsOf(e, now), d.messageId, now, d.payload);
    const result: Attempt = await send(e.url, headers, d.payload, { allowPrivate: deps.allowPrivate });
    const status = result.kind === 'answered' ? result.status : null;
    const ok = status !== null && status >= 200 && status < 300;
    const givenUp = !ok && now.getTime() - d.createdAt.getTime() >= RETRY_FOR_MS;
    const state = ok ? 'delivered' : givenUp ? 'failed' : 'pending';
    await db.webhooks.recordAttemptAlone(d.id, {
      status, ms: result.ms, answer: result.kind === 'answered' ? result.answer : result.reason, state, nextAttemptAt: ok || givenUp ? now : nextAttemptAfter(d.attempts + 1, now),
    }, now);
    if (!ok) logger.info({ endpoint: e.endpointId, delivery: d.id, status, attempts: d.attempts + 1 }, 'a webhook delivery failed; it will be tried again');
    return state;
  }

  return {
    async deliverDue(now) {
      let delivered = 0;
      let failed = 0;
      for (const endpointKey of await db.webhooks.listDueEndpoints(now, 100)) {
        const due = await db.webhooks.listDueDeliveries(endpointKey, now, perEndpoint);
        if (due.length === 0) continue;
        const endpoint = (await db.webhooks.list(due[0].applicationId)).find((e) => e.id === endpointKey);
        if (!endpoint || endpoint.disabledAt) continue;
        // one endpoint's deliveries side by side (each the oldest of its account), endpoints one after another
        const states = await Promise.all(due.map((d) => attempt(endpoint, d, now)));
        delivered += states.filter((s) => s === 'delivered').length;
        failed += states.filter((s) => s !== 'delivered').length;
      }
      return { delivered, failed };
    },
  };
}

/** The webhooks queue's one job so far: deliver what is due (scheduled every few seconds). */
export function createWebhooksProcessor(deliverer: WebhookDeliverer, now: () => Date = () => new Date()) {
  return async (job: Job): Promise<Record<string, unknown>> => {
    if (job.name !== 'deliver') throw new Error(`the webhooks queue has no job named "${job.name}"`);
    return deliverer.deliverDue(now());
  };
}
