import type { Database } from '../../src/db';
import type { Job, JobContext } from '../../src/queue/port';
import type { MailMessage, MailTransport } from '../mail-transport';

/**
 * Sends outbox mail jobs. Idempotent on the outbox id: a job whose row is no longer pending
 * (already sent by another attempt or worker) is skipped; the outbox id is also the message's
 * Message-ID, so a receiving server can discard the duplicate of the one remaining window
 * (a worker dying after the SMTP server accepted the message and before the row was marked).
 */
export function createMailProcessor(deps: { db: Database; transport: MailTransport; now?: () => Date }) {
  const { db, transport } = deps;
  const now = deps.now ?? (() => new Date());
  return async (job: Job, context: JobContext): Promise<unknown> => {
    if (job.name !== 'send') throw new Error(`the mail queue has no job named "${job.name}"`);
    const outboxId = String(job.data.outboxId ?? job.id);
    const row = await db.outbox.find(outboxId);
    if (!row) throw new Error(`outbox row ${outboxId} does not exist`);
    if (row.status !== 'pending') return { skipped: row.status };
    try {
      const sent = await transport.send(outboxId, row.payload.message as MailMessage);
      await db.outbox.complete(outboxId, now());
      return sent;
    } catch (err) {
      await db.outbox.recordFailure(outboxId, (err as Error).message, context.finalAttempt, now());
      throw err;
    }
  };
}
