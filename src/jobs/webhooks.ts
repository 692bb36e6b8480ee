import type { Logger } from '../logger';
import type { Job, JobContext } from '../queue/port';
import { WEBHOOK_JOBS } from '../domain/webhooks';
import type { Services } from '../usecases/services';
import type { WebhookDeliverer } from '../usecases/webhooks/delivery';
import { catchUp, deliverQueued, fanOut, type WebhookJobResult } from '../usecases/webhooks/fan-out';
import { deliverLogout } from '../usecases/oidc/backchannel-logout';

/**
 * The webhooks queue's jobs (docs/webhooks.md#deliveries), each the adapter of one use case: a
 * fan-out (an event's deliveries made and sent), a catch-up (a new endpoint's first seconds read
 * back), a deliver (what is due sent: deliveries queued again for one endpoint, or the
 * recurring run for all) and a back-channel logout (one logout token sent). The job names its outbox row; the use case reads it, and what it came to
 * is the job's result. A use case that throws fails the attempt, and the queue tries it again.
 */
export function createWebhooksProcessor(deps: { services: Pick<Services, 'db' | 'clock'>; deliverer: WebhookDeliverer; logger: Logger; logouts: Parameters<typeof deliverLogout>[0] }) {
  const run = { db: deps.services.db, clock: deps.services.clock, logger: deps.logger, deliverer: deps.deliverer };
  const rendered = (r: WebhookJobResult): Record<string, unknown> => {
    if (r.kind === 'skipped') return { skipped: r.why };
    const { kind: _kind, ...counts } = r;
    return counts;
  };
  return async (job: Job, context: JobContext): Promise<Record<string, unknown>> => {
    const outboxId = String(job.data.outboxId ?? job.id);
    switch (job.name) {
      case WEBHOOK_JOBS.fanOut: return rendered(await fanOut(run, { outboxId }));
      case WEBHOOK_JOBS.catchUp: return rendered(await catchUp(run, { outboxId }));
      // queued for one endpoint (its deliveries queued again), or the recurring run for all
      case WEBHOOK_JOBS.deliver: return rendered(await deliverQueued(run, { outboxId: job.data.outboxId === undefined ? undefined : outboxId }));
      // one logout token to a client's back-channel logout address: a failed attempt throws, and the queue tries it again
      case WEBHOOK_JOBS.logout: {
        const { kind, ...rest } = await deliverLogout(deps.logouts, { outboxId, finalAttempt: context.finalAttempt });
        return { logout: kind, ...rest };
      }
      default: throw new Error(`the webhooks queue has no job named "${job.name}"`);
    }
  };
}
