import type { Sequelize } from 'sequelize';
import type { Config } from '../config';
import { createSequelize } from './database';
import { defineModels, Models } from './models';
import { createApplicationQueries } from './repositories/applications';
import { createClientQueries } from './repositories/clients';
import { createProcedureCalls } from './mysql/procedures';
import { createCredentialQueries } from './repositories/credentials';
import { createRecordQueries } from './repositories/records';
import { createAttributeIndexQueries, createIndexedValues } from './repositories/attribute-indexes';
import { createFlowQueries } from './repositories/flows';
import { createOutboxQueries } from './repositories/outbox';
import { createSocialQueries } from './repositories/social';
import { createVersionQueries } from './repositories/versions';
import { createAuditQueries } from './repositories/audit';
import { createEventQueries } from './repositories/events';
import { createErasureQueries } from './repositories/erasures';
import { createImportQueries } from './repositories/imports';
import { createWebhookQueries } from './repositories/webhooks';
import { createLogoutQueries } from './repositories/logouts';
import { createApiQueries, createRoleQueries } from './repositories/apis';
import { createSamlQueries } from './repositories/saml';
import { createConnectionQueries } from './repositories/connections';
import { createScimQueries } from './repositories/scim';
import { createTallyQueries } from './repositories/tallies';
import { createOrganizationQueries } from './repositories/organizations';
import { createFactorQueries } from './repositories/factors';
import { createPasskeyQueries } from './repositories/passkeys';
import { createSigningKeyQueries } from './repositories/signing-keys';
import { createOidcStateQueries } from './repositories/oidc-state';
import { asTx, createSql, retrying } from './sql';
import { lagTolerantOf, REPLICA_ANSWER_MS, replicaReads, routedReads, type ReplicaEvents, type ReplicaHealth } from './lag-tolerant';
import type { CredentialKind, NewCredential, RotationEvent, Successor } from '../domain/storage/credentials';
import type { KeptEvent } from '../domain/events';
import type { OutboxJob } from '../domain/storage/outbox';
import type { UserRecord } from '../domain/storage/records';
import type { Storage } from '../domain/storage';
import type { Transact, Tx } from '../domain/storage/transactions';

export type { Transact, TransactionOptions, Tx } from '../domain/storage/transactions';
export { isWriteConflict } from './sql';
export { isDatabaseUnavailable } from './unavailable';
export type { ReplicaEvents, ReplicaHealth } from './lag-tolerant';

/**
 * InnoDB may pick a transaction as a deadlock victim when concurrent requests touch the same
 * index ranges; the victim was rolled back entirely, so running it again is safe.
 */
function retryingDeadlocks(open: Transact): Transact {
  return (work, options) => retrying(() => open(work, options));
}

/**
 * SQLite has one writer at a time. Its busy handler makes competing write transactions sleep
 * and poll; queueing them in-process instead (the embedded default is one process) runs them
 * back to back. Transactions must not nest: inner work takes the outer `tx`.
 */
function serialized(sequelize: Sequelize): Transact {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(work: (tx: Tx) => Promise<T>) => {
    const run = tail.then(() => sequelize.transaction((tx) => work(asTx(tx))));
    tail = run.catch(() => undefined);
    return run;
  };
}

/** The storage of src/domain/storage on one engine, with the Sequelize instance beneath it (for migrations, health checks and metrics). */
export interface Database extends Storage {
  sequelize: Sequelize;
  models: Models;
  applications: ReturnType<typeof createApplicationQueries>;
  clients: ReturnType<typeof createClientQueries>;
  flows: ReturnType<typeof createFlowQueries>;
  outbox: ReturnType<typeof createOutboxQueries>;
  credentials: ReturnType<typeof createCredentialQueries> & {
    /**
     * The refresh grant: spends the presented refresh token (live, and the client's own) and
     * inserts its successor access and refresh tokens in its record and family, with its event,
     * committed before it answers. False when nothing was spent.
     */
    rotateAlone(applicationId: number, spentHash: string, ownerClientId: number, successors: { access: Successor; refresh: Successor }, now: Date, event: RotationEvent): Promise<boolean>;
    /** See CredentialStore.consumeWithEventAlone: one procedure call, or a transaction of the two statements. */
    consumeWithEventAlone(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, event: KeptEvent): Promise<boolean>;
  };
  records: ReturnType<typeof createRecordQueries> & {
    /**
     * A sign-in's whole write, committed before it answers: `next` (updated(read, …): lastLogin,
     * and a rehashed password) if the record is still at the version `read` has, the sign-in's
     * credentials, its outbox rows (the new version's snapshot, and any other) and its events. False
     * when the record changed since `read`: nothing is written (the caller locks it and writes in a
     * transaction).
     */
    signInAlone(read: UserRecord, next: UserRecord, credentials: NewCredential[], jobs: OutboxJob[], events: readonly KeptEvent[], now: Date): Promise<boolean>;
  };
  social: ReturnType<typeof createSocialQueries>;
  versions: ReturnType<typeof createVersionQueries>;
  /**
   * Whether sign-in and rotation run as stored procedures (MySQL/MariaDB with
   * DATABASE_PROCEDURES=on); otherwise as transactions of the same statements (SQLite, and engines
   * without procedures).
   */
  procedures: boolean;
  /** The state of each replica of DATABASE_READ_URL (whether its reads go to it), for readiness; empty without replicas. */
  replicaHealth(): ReplicaHealth[];
  /**
   * Runs `work` in one transaction: all of it commits or none of it does. Every repository method
   * taking a `Tx` runs in it. On MySQL it is opened on the driver connection (START TRANSACTION /
   * COMMIT, without Sequelize's transaction machinery, which cost a tenth of the refresh grant's
   * throughput) and run again when it was a deadlock victim; on SQLite it is queued behind the
   * one writer.
   */
  transaction: Transact;
  close(): Promise<void>;
}

/**
 * The writes on every sign-in and refresh (the original API's and the OpenID provider's), each
 * committed before it answers: one CALL of a stored procedure each when `calls` are given (MySQL/MariaDB, DATABASE_PROCEDURES=on), otherwise
 * a transaction of the repositories' statements that does the same.
 */
function hotWrites(
  calls: ReturnType<typeof createProcedureCalls> | undefined,
  queries: {
    credentials: ReturnType<typeof createCredentialQueries>; records: ReturnType<typeof createRecordQueries>;
    outbox: ReturnType<typeof createOutboxQueries>; events: ReturnType<typeof createEventQueries>;
  },
  transaction: Transact,
): Pick<Database, 'credentials' | 'records'> {
  const { credentials, records, outbox, events } = queries;
  const rotateAlone: Database['credentials']['rotateAlone'] = calls?.rotateAlone ?? ((applicationId, spentHash, ownerClientId, successors, now, event) =>
    transaction((tx) => credentials.rotateIn(applicationId, spentHash, ownerClientId, successors, now, event, tx)));
  const statements: Database['records']['signInAlone'] = (read, next, rows, jobs, happened, now) => transaction(async (tx) => {
    // the record's row lock first: a credential row's foreign key check would otherwise take a
    // shared lock on the record, and two sign-ins of one account would deadlock upgrading it
    if (!(await records.writeSignIn(read, next, tx))) return false;
    await credentials.insert(rows, now, tx);
    await outbox.insert(jobs, now, tx);
    await events.append(happened, tx);
    return true;
  });
  // the procedure does not keep indexed attributes: a sign-in that changes one (lastLogin indexed) runs as statements
  const signInAlone: Database['records']['signInAlone'] = calls
    ? async (read, next, rows, jobs, happened, now) => ((await records.indexedChange(read, next)) ? statements : calls.signInAlone)(read, next, rows, jobs, happened, now)
    : statements;
  const consumeWithEventAlone: Database['credentials']['consumeWithEventAlone'] = calls?.consumeWithEventAlone ?? ((applicationId, kind, valueHash, now, event) => transaction(async (tx) => {
    if (!(await credentials.consume(applicationId, kind, valueHash, now, tx))) return false;
    await events.append([event], tx);
    return true;
  }));
  return { credentials: { ...credentials, rotateAlone, consumeWithEventAlone }, records: { ...records, signInAlone } };
}

/** Where a replica is: its host and port, never its credentials. */
const replicaName = (url: string) => {
  const { hostname, port, pathname } = new URL(url);
  return `${hostname}:${port || 3306}${pathname}`;
};

const quiet: ReplicaEvents = { failed: () => {}, answered: () => {} };

/**
 * Opens the database of the configuration and wires every query module to it; the lag-tolerant
 * reads go to the replicas it names (DATABASE_READ_URL), each statement there bounded in time,
 * and `replicaEvents` hears of a replica whose reads the primary answers for a while, and of its
 * return (see routedReads).
 */
export function openDatabase(database: Config['database'], replicaEvents: ReplicaEvents = quiet): Database {
  const sequelize = createSequelize(database);
  const replicas = database.dialect === 'mysql'
    ? database.readUrls.map((url) => ({ name: replicaName(url), sequelize: createSequelize({ ...database, url }, { connectTimeoutMs: REPLICA_ANSWER_MS }) }))
    : [];
  const models = defineModels(sequelize);
  const sql = createSql(sequelize);
  const procedures = database.dialect === 'mysql' && database.procedures;
  const credentials = createCredentialQueries(models, sql);
  const indexedValues = createIndexedValues(sql);
  const records = createRecordQueries(models, sql, indexedValues);
  const outbox = createOutboxQueries(models, sql);
  const events = createEventQueries(sql);
  const transaction: Transact = sql.transaction ? retryingDeadlocks(sql.transaction.bind(sql)) : serialized(sequelize);
  const queries = {
    clients: createClientQueries(models, sql),
    flows: createFlowQueries(models, sql),
    social: createSocialQueries(models, sql),
    versions: createVersionQueries(models, sql, transaction),
    audit: createAuditQueries(sql),
    events,
    factors: createFactorQueries(sql),
    passkeys: createPasskeyQueries(sql),
    signingKeys: createSigningKeyQueries(sql),
    oidcState: createOidcStateQueries(sql),
    erasures: createErasureQueries(sql, transaction),
    imports: createImportQueries(sql),
    webhooks: createWebhookQueries(sql, transaction),
    logouts: createLogoutQueries(sql),
    organizations: createOrganizationQueries(sql),
    saml: createSamlQueries(sql),
    apis: createApiQueries(sql),
    roles: createRoleQueries(sql),
    connections: createConnectionQueries(sql),
    scim: createScimQueries(sql),
    tallies: createTallyQueries(sql, transaction),
    attributeIndexes: createAttributeIndexQueries(sql, indexedValues, transaction),
  };
  const routed = routedReads(
    lagTolerantOf({ ...queries, records, outbox }),
    replicas.map((r) => ({ name: r.name, reads: replicaReads(r.sequelize) })),
    replicaEvents,
  );
  return {
    sequelize,
    models,
    applications: createApplicationQueries(models, sql),
    ...queries,
    outbox,
    ...hotWrites(procedures ? createProcedureCalls(sql) : undefined, { credentials, records, outbox, events }, transaction),
    lagTolerant: routed.reads,
    replicaHealth: routed.health,
    procedures,
    transaction,
    ping: async () => void await sequelize.query('SELECT 1'),
    close: async () => {
      await Promise.all(replicas.map((r) => r.sequelize.close()));
      await sequelize.close();
    },
  };
}
