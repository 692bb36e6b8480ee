import { ConnectionError, type Sequelize, type Transaction } from 'sequelize';
import type { Config } from '../config';
import { createSequelize } from './database';
import { defineModels, Models } from './models';
import { createApplicationQueries } from './repositories/applications';
import { createClientQueries } from './repositories/clients';
import { createCredentialQueries } from './repositories/credentials';
import { createEntityQueries } from './repositories/entities';
import { createFlowQueries } from './repositories/flows';
import { createOutboxQueries } from './repositories/outbox';
import { createSocialQueries } from './repositories/social';
import { createVersionQueries } from './repositories/versions';
import { createSql, retrying, type AnyTx, type StatementOptions } from './sql';

/** An open database transaction, opaque to the domain layer. */
export type Tx = Transaction;
/** What the raw statements of src/db/sql.ts run in: `Tx`, or a transaction of `statements`. */
export type { AnyTx } from './sql';

export type Transact<X = Tx, O = never> = <T>(work: (tx: X) => Promise<T>, options?: O) => Promise<T>;


/** Driver codes and MySQL error numbers meaning the server cannot be reached or is going away. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR',
]);
const UNAVAILABLE_ERRNOS = new Set([1040 /* too many connections */, 1053 /* shutdown in progress */, 1927 /* connection killed */, 2002, 2003, 2006, 2013, 4031]);

/**
 * Whether `err` says the database cannot be reached (down, restarting, out of connections) rather
 * than that a statement failed: such a request gets 503 with Retry-After instead of a 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as Record<string, unknown> | undefined, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    if (e instanceof ConnectionError) return true;
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.errno === 'number' && UNAVAILABLE_ERRNOS.has(e.errno)) return true;
    e = (e.parent ?? e.original ?? e.cause) as Record<string, unknown> | undefined;
  }
  return false;
}

/**
 * InnoDB may pick a transaction as a deadlock victim when concurrent requests touch the same
 * index ranges; the victim was rolled back entirely, so running it again is safe.
 */
function retryingDeadlocks<X, O>(open: Transact<X, O>, attempts = 3): Transact<X, O> {
  return <T>(work: (tx: X) => Promise<T>, options?: O) => retrying(() => open(work, options), attempts);
}

/**
 * SQLite has one writer at a time. Its busy handler makes competing write transactions sleep
 * and poll; queueing them in-process instead (the embedded default is one process) runs them
 * back to back. Transactions must not nest: inner work takes the outer `tx`.
 */
function serialized(sequelize: Sequelize): Transact {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(work: (tx: Tx) => Promise<T>) => {
    const run = tail.then(() => sequelize.transaction((tx) => work(tx)));
    tail = run.catch(() => undefined);
    return run;
  };
}

export interface Database {
  sequelize: Sequelize;
  models: Models;
  applications: ReturnType<typeof createApplicationQueries>;
  clients: ReturnType<typeof createClientQueries>;
  flows: ReturnType<typeof createFlowQueries>;
  outbox: ReturnType<typeof createOutboxQueries>;
  credentials: ReturnType<typeof createCredentialQueries>;
  entities: ReturnType<typeof createEntityQueries>;
  social: ReturnType<typeof createSocialQueries>;
  versions: ReturnType<typeof createVersionQueries>;
  /** Runs `work` in one transaction: all of it commits or none of it does. */
  transaction: Transact;
  /**
   * The same for work made only of the raw statements of src/db/sql.ts (the methods taking
   * `AnyTx`): on MySQL opened on the driver, which saves Sequelize's transaction machinery on the
   * refresh grant and on every request that commits an email; on SQLite it is `transaction`.
   */
  statements: Transact<AnyTx, StatementOptions>;
  close(): Promise<void>;
}

/** Opens the database of the configuration and wires every query module to it. */
export function openDatabase(database: Config['database']): Database {
  const sequelize = createSequelize(database);
  const models = defineModels(sequelize);
  const sql = createSql(sequelize);
  const transaction: Transact = database.dialect === 'sqlite'
    ? serialized(sequelize)
    : retryingDeadlocks((work) => sequelize.transaction((tx) => work(tx)));
  const statements: Transact<AnyTx, StatementOptions> = sql.transaction
    ? retryingDeadlocks<AnyTx, StatementOptions>(sql.transaction.bind(sql))
    : (work) => transaction(work);
  return {
    sequelize,
    models,
    applications: createApplicationQueries(models, transaction),
    clients: createClientQueries(models, transaction),
    flows: createFlowQueries(models),
    outbox: createOutboxQueries(models, sql),
    credentials: createCredentialQueries(models, sql),
    entities: createEntityQueries(models, sql),
    social: createSocialQueries(models, sql),
    versions: createVersionQueries(models, sql),
    transaction,
    statements,
    close: () => sequelize.close(),
  };
}
