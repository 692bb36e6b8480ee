import type { Storage } from '../domain/storage';
import { DEFAULT_BRAND_COLOR, paletteOf } from '../domain/brand';
import { mailFieldsOf, withoutAddresses } from '../domain/mail';
import { mailPayloadOf } from '../domain/payloads';
import type { SecretBox } from '../domain/secrets';
import type { Job, JobContext } from '../queue/port';
import type { MailTransport } from './mail-transport';
import { formatDuration, type MailTemplates } from './mail-templates';

/**
 * Renders and sends outbox mail jobs. Idempotent on the outbox id: a job whose row is no longer
 * pending (sent by an earlier attempt, or by another worker) is skipped, and the row is marked
 * done right after the SMTP server accepts the message. One window remains: a worker that dies
 * after the server accepted the message and before the row is marked sends it again on retry.
 * The outbox id is the message's Message-ID, so receiving systems that de-duplicate on it drop
 * that copy. After sending, the row keeps template, locale and recipient, not the link.
 */
export function createMailProcessor(deps: {
  db: Storage;
  transport: MailTransport;
  templates: Promise<MailTemplates>;
  box: SecretBox;
  from: string;
  now?: () => Date;
  /** Counts each email handed to the transport, or refused by it. */
  sent?: (outcome: 'sent' | 'failed') => void;
}) {
  const { db, transport, box, from } = deps;
  const now = deps.now ?? (() => new Date());
  return async (job: Job, context: JobContext): Promise<unknown> => {
    if (job.name !== 'send') throw new Error(`the mail queue has no job named "${job.name}"`);
    const outboxId = String(job.data.outboxId ?? job.id);
    const row = await db.outbox.find(outboxId);
    // erased with its account (docs/lifecycle.md#erase): nothing to send
    if (!row) return { skipped: 'erased' };
    if (row.status !== 'pending') return { skipped: row.status };
    try {
      const mail = mailPayloadOf(row.payload);
      // a mail addressed to nobody (a sign-in code asked for an address that gets none): done, nothing sent
      if (mail.to === '') {
        await db.outbox.completeAlone(outboxId, now(), { template: mail.template, locale: mail.locale, to: '' });
        return { skipped: 'no recipient' };
      }
      const link = mail.sealedLink === undefined ? '' : box.open(mail.sealedLink, outboxId);
      const rendered = (await deps.templates).render(mail.template, mail.locale, {
        appName: mail.appName,
        ...paletteOf(mail.brand?.color ?? DEFAULT_BRAND_COLOR),
        logoUrl: mail.brand?.logoUrl,
        name: mail.name,
        email: mail.to,
        link,
        code: mail.sealedCode === undefined ? undefined : box.open(mail.sealedCode, outboxId),
        expiresIn: mail.expiresIn ? formatDuration(mail.expiresIn, mail.locale) : '',
        ...mailFieldsOf(mail),
        // who invited, as the message names them: the person, else the application
        inviterName: mail.template === 'organization-invitation' ? mail.inviterName ?? mail.appName : mail.inviterName,
      });
      const sent = await transport.send(outboxId, { from, to: mail.to, ...rendered }).catch((err: unknown) => {
        deps.sent?.('failed');
        throw err;
      });
      deps.sent?.('sent');
      const completed = await db.outbox.completeAlone(outboxId, now(), { template: mail.template, locale: mail.locale, to: mail.to });
      // its account was erased while it was being sent: the row is gone, and so goes what the transport kept (a file)
      if (!completed && !(await db.outbox.find(outboxId))) transport.forget?.(outboxId);
      return { messageId: sent.messageId };
    } catch (err) {
      // an SMTP server's refusal often quotes the recipient: neither the outbox row nor the job
      // (which the dashboard shows) keeps an address
      const reason = withoutAddresses((err as Error).message);
      await db.outbox.recordFailureAlone(outboxId, reason, context.finalAttempt, now());
      throw Object.assign(new Error(reason), { name: (err as Error).name });
    }
  };
}
