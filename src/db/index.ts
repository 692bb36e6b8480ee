import type { Sequelize, Transaction } from 'sequelize';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { createSequelize } from './database';
import { defineModels, Models } from './models';
import { createApplicationQueries } from './repositories/applications';
import { createClientQueries } from './repositories/clients';
import { createCredentialQueries } from './repositories/credentials';
import { createFlowQueries } from './repositories/flows';
import { createOutboxQueries } from './repositories/outbox';

/** An open database transaction, opaque to the domain layer. */
export type Tx = Transaction;

export interface Database {
  sequelize: Sequelize;
  models: Models;
  applications: ReturnType<typeof createApplicationQueries>;
  clients: ReturnType<typeof createClientQueries>;
  flows: ReturnType<typeof createFlowQueries>;
  outbox: ReturnType<typeof createOutboxQueries>;
  credentials: ReturnType<typeof createCredentialQueries>;
  /** Runs `work` in one transaction: all of it commits or none of it does. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Opens the database of the configuration and wires every query module to it. */
export function openDatabase(database: Config['database'], logger?: Logger): Database {
  const sequelize = createSequelize(database, logger);
  const models = defineModels(sequelize);
  return {
    sequelize,
    models,
    applications: createApplicationQueries(models),
    clients: createClientQueries(models),
    flows: createFlowQueries(models),
    outbox: createOutboxQueries(models),
    credentials: createCredentialQueries(models),
    transaction: (work) => sequelize.transaction((tx) => work(tx)),
    close: () => sequelize.close(),
  };
}
