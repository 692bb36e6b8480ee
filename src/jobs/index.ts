import { NO_MAIL_TRANSPORT, type Config } from '../config';
import type { Logger } from '../logger';
import type { RelayingOutbox } from '../queue/outbox';
import { QUEUE_NAMES, type Processor, type Processors, type QueueName } from '../queue/port';
import type { Metrics } from '../metrics';
import { createFileTransport, createSmtpTransport, MailTransport } from './mail-transport';
import path from 'node:path';
import { SecretBox } from '../domain/secrets';
import { projectRoot } from '../paths';
import { mailFolderAt } from '../mail-files';
import { loadMailTemplates } from './mail-templates';
import { createMailProcessor } from './mail';
import { createMaintenanceProcessor, DEFAULT_MAINTENANCE, MaintenanceSettings } from './maintenance';
import { createVersionsProcessor, type VersionsSettings } from './versions';
import { createWebhooksProcessor } from './webhooks';
import { logoutTransport, webhookTransport } from './webhook-sender';
import { createBaseUrls } from '../domain/base-urls';
import type { Services } from '../usecases/services';
import { createWebhookDeliverer } from '../usecases/webhooks/delivery';

/** Every queue's processor, wired to its dependencies. Used by worker processes and the in-process runner. */
export function createProcessors(deps: {
  config: Config;
  /**
   * What the use cases the jobs run take: storage, the unit of work their changes commit in (with
   * this process's outbox: an endpoint removed or disabled has its event), the clock.
   */
  services: Pick<Services, 'db' | 'work' | 'clock'>;
  outbox: RelayingOutbox;
  logger: Logger;
  maintenance?: Partial<MaintenanceSettings>;
  versions?: Partial<VersionsSettings>;
  /** Jobs run and emails sent are counted here. */
  metrics?: Metrics;
}): { processors: Processors; templates: ReturnType<typeof loadMailTemplates>; close(): void } {
  const { config, outbox, logger } = deps;
  const { db } = deps.services;
  const box = new SecretBox(config.secretKey);
  if (!config.mailTransport) throw new Error(NO_MAIL_TRANSPORT);
  const transport: MailTransport = config.mailTransport === 'smtp'
    ? createSmtpTransport(config.smtpUrl!)
    : createFileTransport(config.mailDir, logger);
  const templates = loadMailTemplates(path.join(projectRoot(), 'templates'), logger);
  templates.catch((err: Error) => logger.fatal({ err: err.message }, 'email templates do not compile'));
  const processors: Processors = {
    mail: createMailProcessor({ db, transport, templates, box, from: config.mailFrom, sent: deps.metrics?.email }),
    maintenance: createMaintenanceProcessor({
      services: { ...deps.services, box, ...(config.mailTransport === 'file' && { mailFolder: mailFolderAt(config.mailDir) }) }, outbox, logger, settings: {
        ...DEFAULT_MAINTENANCE,
        relayGraceMs: config.outboxRelayAfterSeconds * 1000,
        versionsRetentionMs: config.versionsRetentionDays === null ? null : config.versionsRetentionDays * 86_400_000,
        eventsRetentionMs: config.eventsRetentionDays * 86_400_000,
        credentialRetentionMs: config.credentialsRetentionMinutes * 60_000,
        ...deps.maintenance,
      },
    }),
    versions: createVersionsProcessor({ services: { ...deps.services, logger }, settings: deps.versions }),
    webhooks: createWebhooksProcessor({
      services: deps.services, logger,
      // back-channel logout tokens, signed with the applications' keys for their issuers (docs/openid-connect.md#back-channel-logout)
      logouts: {
        ...deps.services, box, baseUrls: createBaseUrls(config.publicBaseUrl, config.defaultApp, config.console),
        transport: logoutTransport({ allowPrivate: config.webhooks.allowPrivate }),
      },
      deliverer: createWebhookDeliverer({
        services: { ...deps.services, box, logger }, transport: webhookTransport({ allowPrivate: config.webhooks.allowPrivate }), watch: deps.metrics?.webhooks,
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
