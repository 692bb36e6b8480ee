import fs from 'node:fs';
import path from 'node:path';
import { Sequelize, Transaction } from 'sequelize';
import type { Config } from '../config';

type SqliteConnection = { exec(sql: string, cb: (err: Error | null) => void): void; gatehousePrepared?: boolean };

// secure_delete: a deleted row's bytes are overwritten with zeros in its page, so an erasure leaves nothing in the file's free space
const SQLITE_PRAGMAS = 'PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON;';

/**
 * Sequelize's SQLite dialect opens a connection per transaction and runs no connect hook, so
 * the pragmas (busy timeout and synchronous are per connection) are applied here, once per
 * connection, as each is handed out.
 */
function preparePerConnection(sequelize: Sequelize): void {
  const manager = (sequelize as unknown as { connectionManager: { getConnection(o?: unknown): Promise<SqliteConnection> } }).connectionManager;
  const getConnection = manager.getConnection.bind(manager);
  manager.getConnection = async (options?: unknown) => {
    const connection = await getConnection(options);
    if (!connection.gatehousePrepared) {
      await new Promise<void>((resolve, reject) => connection.exec(SQLITE_PRAGMAS, (err) => (err ? reject(err) : resolve())));
      connection.gatehousePrepared = true;
    }
    return connection;
  };
}

/** The driver's connection as Sequelize's hook gets it (mysql2's callback API). */
interface MysqlCallbackConnection { query(sql: string, cb: (err: Error | null, rows: unknown) => void): void }

const ask = (c: MysqlCallbackConnection, sql: string) =>
  new Promise<unknown>((resolve, reject) => c.query(sql, (err, rows) => (err ? reject(err) : resolve(rows))));

/**
 * Read your writes on a Galera cluster (docs/scaling.md). Each node applies the others' writes a
 * moment after they commit, so a pod on node 2 could miss a token a pod on node 1 has just issued,
 * or read a record as it was before a change made there. On a Galera node every statement of
 * this connection that reads, updates, deletes or inserts first waits until the node has applied
 * every write the cluster committed before it (wsrep_sync_wait = 7). One server, or MySQL without
 * Galera, has nothing to wait for: the variable is left alone.
 */
async function readYourWrites(connection: MysqlCallbackConnection): Promise<void> {
  const rows = await ask(connection, "SHOW VARIABLES LIKE 'wsrep_on'") as { Value?: string }[];
  if (rows[0]?.Value === 'ON') await ask(connection, 'SET SESSION wsrep_sync_wait = 7');
}

/**
 * The SQLite file holds password hashes and sealed secrets: created (or tightened) so that only its
 * owner can read it, before SQLite opens it. Its -wal and -shm files take the same mode.
 */
function ownerOnly(storage: string): void {
  fs.mkdirSync(path.dirname(storage), { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(storage, 'a', 0o600));
  const stat = fs.statSync(storage);
  if ((stat.mode & 0o077) !== 0 && stat.uid === process.getuid?.()) fs.chmodSync(storage, 0o600);
}

/**
 * The Sequelize instance for either backend. SQLite runs in WAL mode with a busy timeout and
 * IMMEDIATE transactions (a write transaction takes the write lock up front instead of failing
 * with SQLITE_BUSY half-way); MySQL/MariaDB store and read every DATETIME in UTC.
 */
/**
 * No statement logging: Sequelize logs statements with their values inlined (hashes, emails).
 * `replica.connectTimeoutMs` makes a MySQL connection to a replica give up its connect (and the
 * server's greeting) after that long, and skips Sequelize's probe of the server's version (an
 * unbounded query on the first connection): a replica runs only the statements of sql.ts.
 */
export function createSequelize(database: Config['database'], replica?: { connectTimeoutMs: number }): Sequelize {
  const logging = false;
  if (database.dialect === 'sqlite') {
    ownerOnly(database.storage);
    const sequelize = new Sequelize({
      dialect: 'sqlite',
      storage: database.storage,
      logging,
      transactionType: Transaction.TYPES.IMMEDIATE,
      retry: { max: 10, match: [/SQLITE_BUSY/] },
    });
    preparePerConnection(sequelize);
    return sequelize;
  }
  return new Sequelize(database.url, {
    dialect: 'mysql',
    logging,
    hooks: { afterConnect: (connection: unknown) => readYourWrites(connection as MysqlCallbackConnection) },
    timezone: '+00:00',
    dialectOptions: { charset: 'utf8mb4', dateStrings: false, ...(replica ? { connectTimeout: replica.connectTimeoutMs } : {}) },
    ...(replica ? { databaseVersion: '10.11.0' } : {}),
    pool: { max: 20, min: 0, acquire: 10_000, idle: 10_000 },
    define: { charset: 'utf8mb4', collate: 'utf8mb4_bin' },
  });
}
