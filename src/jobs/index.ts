import { NO_MAIL_TRANSPORT, type Config } from '../config';
import type { Storage } from '../domain/storage';
import type { Logger } from '../logger';
import type { RelayingOutbox } from '../queue/outbox';
import { QUEUE_NAMES, type Processor, type Processors, type QueueName } from '../queue/port';
import type { Metrics } from '../metrics';
import { createFileTransport, createSmtpTransport, MailTransport } from './mail-transport';
import path from 'node:path';
import { SecretBox } from '../domain/secrets';
import { projectRoot } from '../paths';
import { loadMailTemplates } from './mail-templates';
import { createMailProcessor } from './mail';
import { createMaintenanceProcessor, DEFAULT_MAINTENANCE, MaintenanceSettings } from './maintenance';
import { createVersionsProcessor, type VersionsSettings } from './versions';
import { createWebhookDeliverer, createWebhooksProcessor, type EndpointChanges } from './webhooks';

/** Every queue's processor, wired to its dependencies. Used by worker processes and the in-process runner. */
export function createProcessors(deps: {
  config: Config;
  db: Storage;
  outbox: RelayingOutbox;
  logger: Logger;
  maintenance?: Partial<MaintenanceSettings>;
  versions?: Partial<VersionsSettings>;
  /** Jobs run and emails sent are counted here. */
  metrics?: Metrics;
  /** What the webhooks deliverer changes about an endpoint (removed when gone, disabled when failing for days): use cases, handed in by the wiring. */
  webhookChanges: EndpointChanges;
}): { processors: Processors; templates: ReturnType<typeof loadMailTemplates>; close(): void } {
  const { config, db, outbox, logger } = deps;
  if (!config.mailTransport) throw new Error(NO_MAIL_TRANSPORT);
  const transport: MailTransport = config.mailTransport === 'smtp'
    ? createSmtpTransport(config.smtpUrl!)
    : createFileTransport(config.mailDir, logger);
  const templates = loadMailTemplates(path.join(projectRoot(), 'templates'), logger);
  templates.catch((err: Error) => logger.fatal({ err: err.message }, 'email templates do not compile'));
  const processors: Processors = {
    mail: createMailProcessor({ db, transport, templates, box: new SecretBox(config.secretKey), from: config.mailFrom, sent: deps.metrics?.email }),
    maintenance: createMaintenanceProcessor({
      db, outbox, logger, erase: { box: new SecretBox(config.secretKey), mailDir: config.mailTransport === 'file' ? config.mailDir : undefined }, settings: {
        ...DEFAULT_MAINTENANCE,
        relayGraceMs: config.outboxRelayAfterSeconds * 1000,
        versionsRetentionMs: config.versionsRetentionDays === null ? null : config.versionsRetentionDays * 86_400_000,
        eventsRetentionMs: config.eventsRetentionDays * 86_400_000,
        ...deps.maintenance,
      },
    }),
    versions: createVersionsProcessor({ db, logger, settings: deps.versions }),
    webhooks: createWebhooksProcessor({
      db, logger,
      deliverer: createWebhookDeliverer({
        db, box: new SecretBox(config.secretKey), logger, allowPrivate: config.webhooks.allowPrivate, watch: deps.metrics?.webhooks,
        changes: deps.webhookChanges,
      }),
    }),
  };
  return { processors: deps.metrics ? counted(processors, deps.metrics) : processors, templates, close: () => transport.close() };
}

/**
 * Every processor timed and counted by outcome: `completed`, `retried` (an attempt failed and
 * another will come) or `failed` (the last attempt failed: the job is given up). A job counts once
 * as completed or failed, so alerts can read `failed` as jobs lost to errors.
 */
export function counted(processors: Processors, metrics: Metrics): Processors {
  const wrap = (queue: QueueName, run: Processor): Processor => async (job, context) => {
    const started = performance.now();
    try {
      const result = await run(job, context);
      metrics.job(queue, job.name, 'completed', (performance.now() - started) / 1000);
      return result;
    } catch (err) {
      metrics.job(queue, job.name, context.finalAttempt ? 'failed' : 'retried', (performance.now() - started) / 1000);
      throw err;
    }
  };
  return Object.fromEntries(QUEUE_NAMES.map((q) => [q, wrap(q, processors[q])])) as Processors;
}
