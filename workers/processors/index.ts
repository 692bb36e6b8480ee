import type { Config } from '../../src/config';
import type { Database } from '../../src/db';
import type { Logger } from '../../src/logger';
import type { Outbox } from '../../src/queue/outbox';
import type { Job, Processors } from '../../src/queue/port';
import { createFileTransport, createSmtpTransport, MailTransport } from '../mail-transport';
import { createMailProcessor } from './mail';
import { createMaintenanceProcessor, DEFAULT_MAINTENANCE, MaintenanceSettings } from './maintenance';

/** Every queue's processor, wired to its dependencies. Used by worker processes and the in-process runner. */
export function createProcessors(deps: {
  config: Config;
  db: Database;
  outbox: Outbox;
  logger: Logger;
  maintenance?: Partial<MaintenanceSettings>;
}): { processors: Processors; close(): void } {
  const { config, db, outbox, logger } = deps;
  const transport: MailTransport = config.smtpUrl
    ? createSmtpTransport(config.smtpUrl)
    : createFileTransport(config.mailDir, logger);
  const processors: Processors = {
    mail: createMailProcessor({ db, transport }),
    maintenance: createMaintenanceProcessor({ db, outbox, logger, settings: { ...DEFAULT_MAINTENANCE, ...deps.maintenance } }),
    versions: async (job: Job) => {
      throw new Error(`the versions queue has no job named "${job.name}"`);
    },
  };
  return { processors, close: () => transport.close() };
}
