import { StatementTimeoutError } from '../domain/storage/transactions';
import { QueryTypes, Transaction, UniqueConstraintError, type Sequelize } from 'sequelize';
import sqlite3 from 'sqlite3';
import { sqlTime } from './models';
import { NO_ANSWER } from './unavailable';
import type { TransactionOptions, Tx } from '../domain/storage/transactions';

/**
 * Raw SQL for the statements on every sign-in, registration and token request. On MySQL/MariaDB
 * they go straight to the mysql2 connection Sequelize's pool (or the caller's transaction) holds,
 * with the driver's own `?` escaping and type casting: Sequelize's query layer (option cloning,
 * hooks, moment-based date parsing) cost as much main-thread time as the statements themselves.
 * On SQLite they go through `sequelize.query` with bind parameters. Values are always bound, never
 * spliced into the statement text.
 */
export interface Sql {
  select<T>(sql: string, values: unknown[], tx?: Tx): Promise<T[]>;
  /**
   * A SELECT outside any transaction that the database stops after `timeoutMs` (MariaDB
   * `max_statement_time`, MySQL `MAX_EXECUTION_TIME`, SQLite an interrupt): it then throws
   * StatementTimeoutError, and nothing else keeps running on its behalf.
   */
  selectBounded<T>(sql: string, values: unknown[], timeoutMs: number): Promise<T[]>;
  /** Runs an INSERT, UPDATE or DELETE and answers the number of rows it changed. */
  change(sql: string, values: unknown[], tx?: Tx): Promise<number>;
  /** Runs an INSERT of one row and answers its auto-increment id. */
  insert(sql: string, values: unknown[], tx?: Tx): Promise<number>;
  /** A DATETIME(6) value for this dialect, with its milliseconds (see sqlTime). */
  time(date: Date): string;
  /** What ends a SELECT that locks its rows to the end of the transaction: ` FOR UPDATE`, or nothing on SQLite (which writes one transaction at a time). */
  forUpdate: string;
  /**
   * What sets the time column `column` to the bound time (one `?`) so that the row always changes:
   * on MySQL a microsecond past what it holds when that is later. An UPDATE that leaves a row as
   * it was writes nothing, which a Galera cluster certifies against nothing (see claims in
   * docs/scaling.md); SQLite writes one transaction at a time and takes the time as it is.
   */
  later(column: string): string;
  dialect: 'mysql' | 'sqlite';
  /**
   * Runs `work` in one transaction opened on the driver (MySQL only): START TRANSACTION and
   * COMMIT without Sequelize's transaction machinery. Only these statements run in it (models
   * take no `Tx`).
   */
  transaction?<T>(work: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

/**
 * What a `Tx` holds here: a statement transaction's connection on MySQL (Sql.transaction), a
 * Sequelize transaction on SQLite (Database.transaction queues them behind the one writer).
 */
interface StatementTx { readonly statementConnection: unknown }
const held = (tx: Tx) => tx as unknown as StatementTx | Transaction;
/** The handle of a transaction this module opened, as the domain sees it. */
export const asTx = (opened: StatementTx | Transaction) => opened as unknown as Tx;

/**
 * MySQL error numbers after which the whole transaction may simply run again. 1213 is a deadlock
 * victim on InnoDB and, on a Galera cluster, a transaction that lost certification to a write on
 * another node ("WSREP detected deadlock/conflict"): either way it was rolled back entirely. 1467
 * is how InnoDB reports a deadlock met while waiting for the table's AUTO-INC lock, which
 * INSERT … SELECT takes under innodb_autoinc_lock_mode=1 (MariaDB's default; MySQL 8 defaults to 2
 * and never takes it).
 */
const RETRYABLE = new Set([1213 /* ER_LOCK_DEADLOCK */, 1205 /* ER_LOCK_WAIT_TIMEOUT */, 1467 /* ER_AUTOINC_READ_FAILED */]);

/**
 * Whether `e` (from Sequelize, which wraps the driver's error in `parent`, or from here) says the
 * transaction lost to a concurrent one and may run again. Once retries run out the request is
 * answered 503 with Retry-After (app.ts), never 500: nothing was written.
 */
export function isWriteConflict(e: unknown): boolean {
  const errno = errnoOf(e);
  return errno !== undefined && RETRYABLE.has(errno);
}

const errnoOf = (e: unknown) => (e as { parent?: { errno?: number } })?.parent?.errno ?? (e as { errno?: number })?.errno;

/** A lock wait that timed out has already waited innodb_lock_wait_timeout (50 s by default): it runs once more, not over and over. */
const LOCK_WAIT_TIMEOUT = 1205;

/** Attempts in all for a transaction that keeps losing to concurrent ones (deadlocks, Galera certification). */
export const WRITE_ATTEMPTS = 8;

/**
 * Runs `work` again while it fails with a write conflict (isWriteConflict), up to `attempts` times in
 * all, after a pause drawn at random up to a ceiling that doubles from 4 ms to 256 ms ("full
 * jitter"): writers that collided do not collide again in step, and on a Galera cluster, where
 * every node certifies the same hot row, the retries spread out instead of failing together.
 */
export async function retrying<T>(work: () => Promise<T>, attempts = WRITE_ATTEMPTS): Promise<T> {
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      // a lock wait that timed out runs once more (its own once: deadlocks lost before it do not use it up)
      const timedOut = errnoOf(e) === LOCK_WAIT_TIMEOUT && ++waited > 1;
      if (!isWriteConflict(e) || timedOut || attempt >= attempts) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(256, 4 * 2 ** (attempt - 1))));
    }
  }
}

export { StatementTimeoutError };

/** A unique index refused a row (MySQL ER_DUP_ENTRY, SQLite UNIQUE constraint). */
export class DuplicateKeyError extends Error {}

/** A driver error without the statement text (which holds bound values, such as password hashes). */
export class SqlError extends Error {
  constructor(message: string, readonly errno: number | undefined, readonly code: string | undefined) {
    super(message);
  }
}

/**
 * A server that did not answer a statement in time (see `SqlOptions.answerWithinMs`): its
 * connection was closed, and the server counts as unavailable (isDatabaseUnavailable).
 */
export class NoAnswerError extends Error {
  readonly code = NO_ANSWER;
  constructor(readonly waitedMs: number) {
    super(`the database server did not answer within ${waitedMs} ms; its connection was closed`);
  }
}

interface MysqlResult { affectedRows?: number; insertId?: number }
export interface MysqlConnection {
  query(options: { sql: string; values: unknown[]; typeCast: typeof driverTypes }, cb: (err: MysqlError | null, result: unknown) => void): void;
  destroy(): void;
  stream?: { destroy(): void };
}
interface MysqlError { message: string; sqlMessage?: string; errno?: number; code?: string }
/** Sequelize's connection manager, as the statements use it. */
export interface Pool {
  getConnection(options: { type: 'write' }): Promise<MysqlConnection>;
  releaseConnection(c: MysqlConnection): void;
  destroyConnection(c: MysqlConnection): Promise<void>;
}

/** How the statements of one database are run. */
export interface SqlOptions {
  /**
   * MySQL only: the time a statement outside any transaction has to answer, waiting for a
   * connection included; a bounded statement (`selectBounded`) has this much beyond its own limit.
   * Past it the statement fails with NoAnswerError and its connection is destroyed, never
   * returned to the pool (it still waits for the answer of a server that may never give it).
   * Unset: statements wait as long as the server takes (the primary's).
   */
  answerWithinMs?: number;
}

const ER_DUP_ENTRY = 1062;
/** MariaDB ER_STATEMENT_TIMEOUT, MySQL ER_QUERY_TIMEOUT. */
const STATEMENT_TIMEOUTS = new Set([1969, 3024]);

/**
 * The driver's own conversions (DATETIME to Date in the connection's UTC, numbers to numbers)
 * instead of Sequelize's connection-wide moment-based typeCast. It must be a function: mysql2
 * replaces any other per-query value with the connection's function while compiling a row parser,
 * and then never finds that parser in its cache again (one compile per query).
 */
const driverTypes = (_field: unknown, next: () => unknown) => next();

/**
 * Runs `statement` on a connection of `pool`, all of it (waiting for a connection, connecting, the
 * statement) within `ms`. Past it: NoAnswerError; a connection still waiting for its answer is
 * closed and taken out of the pool, and one handed out too late goes back to the pool unused.
 * mysql2's own bounds do not do this: `connectTimeout` covers only the connect, and a query's
 * `timeout` leaves the connection in the pool with the unanswered statement still at its head.
 */
export async function answerWithin<T>(pool: Pool, ms: number, statement: (connection: MysqlConnection) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswerError(ms)), ms);
  });
  const acquiring = pool.getConnection({ type: 'write' });
  let connection: MysqlConnection;
  try {
    connection = await Promise.race([acquiring, late]);
  } catch (e) {
    clearTimeout(timer);
    if (e instanceof NoAnswerError) acquiring.then((c) => pool.releaseConnection(c), () => undefined);
    throw e;
  }
  let stuck = false;
  try {
    return await Promise.race([statement(connection), late]);
  } catch (e) {
    stuck = e instanceof NoAnswerError;
    throw e;
  } finally {
    clearTimeout(timer);
    if (!stuck) {
      pool.releaseConnection(connection);
    } else {
      connection.destroy();
      connection.stream?.destroy();
      void pool.destroyConnection(connection).catch(() => undefined);
    }
  }
}

function mysqlSql(sequelize: Sequelize, options: SqlOptions): Sql {
  const pool = (sequelize as unknown as { connectionManager: Pool }).connectionManager;
  const run = (connection: MysqlConnection, sql: string, values: unknown[]) => new Promise<unknown>((resolve, reject) => {
    connection.query({ sql, values, typeCast: driverTypes }, (err, result) => {
      if (!err) return resolve(result);
      const message = err.sqlMessage ?? err.message;
      reject(err.errno === ER_DUP_ENTRY ? new DuplicateKeyError(message) : new SqlError(message, err.errno, err.code));
    });
  });
  const exec = async (sql: string, values: unknown[], tx?: Tx, limitMs = 0): Promise<unknown> => {
    if (tx) {
      const handle = held(tx);
      // a handle without a connection would run the statement outside its transaction: refused
      if (!('statementConnection' in handle)) throw new Error('a transaction that is not a statement transaction reached the MySQL statements');
      return run(handle.statementConnection as MysqlConnection, sql, values);
    }
    const { answerWithinMs } = options;
    if (answerWithinMs !== undefined) return answerWithin(pool, limitMs + answerWithinMs, (connection) => run(connection, sql, values));
    // a statement of its own is its own transaction: one that lost to a concurrent write (a
    // deadlock, a Galera certification failure) was rolled back whole and runs again
    return retrying(async () => {
      const connection = await pool.getConnection({ type: 'write' });
      try {
        return await run(connection, sql, values);
      } finally {
        pool.releaseConnection(connection);
      }
    });
  };
  // MariaDB bounds a statement with SET STATEMENT, MySQL with an optimizer hint (which MariaDB
  // reads as a comment): asked once, the first time a bounded statement runs
  let flavour: Promise<'mariadb' | 'mysql'> | undefined;
  const serverFlavour = () => (flavour ??= exec('SELECT VERSION() AS v', []).then(
    (rows) => (/mariadb/i.test(String((rows as { v: string }[])[0].v)) ? 'mariadb' as const : 'mysql' as const),
    (e) => {
      flavour = undefined;
      throw e;
    },
  ));
  return {
    select: async <T>(sql: string, values: unknown[], tx?: Tx) => (await exec(sql, values, tx)) as T[],
    async selectBounded<T>(sql: string, values: unknown[], timeoutMs: number) {
      const bounded = (await serverFlavour()) === 'mariadb'
        ? `SET STATEMENT max_statement_time = ${(timeoutMs / 1000).toFixed(3)} FOR ${sql}`
        : sql.replace(/^\s*SELECT\b/i, `SELECT /*+ MAX_EXECUTION_TIME(${Math.ceil(timeoutMs)}) */`);
      try {
        return (await exec(bounded, values, undefined, timeoutMs)) as T[];
      } catch (e) {
        if (e instanceof SqlError && e.errno !== undefined && STATEMENT_TIMEOUTS.has(e.errno)) throw new StatementTimeoutError(timeoutMs);
        throw e;
      }
    },
    change: async (sql, values, tx) => ((await exec(sql, values, tx)) as MysqlResult).affectedRows ?? 0,
    insert: async (sql, values, tx) => Number(((await exec(sql, values, tx)) as MysqlResult).insertId),
    time: (date) => sqlTime('mysql', date),
    forUpdate: ' FOR UPDATE',
    later: (column) => `GREATEST(CAST(? AS DATETIME(6)), ${column} + INTERVAL 1 MICROSECOND)`,
    dialect: 'mysql',
    async transaction<T>(work: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      const connection = await pool.getConnection({ type: 'write' });
      try {
        // applies to the next transaction only; the connection returns to the default after it
        if (options.readCommitted) await run(connection, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED', []);
        await run(connection, 'START TRANSACTION', []);
        let out: T;
        try {
          out = await work(asTx({ statementConnection: connection }));
        } catch (e) {
          await run(connection, 'ROLLBACK', []).catch(() => undefined);
          throw e;
        }
        await run(connection, 'COMMIT', []);
        return out;
      } finally {
        pool.releaseConnection(connection);
      }
    },
  };
}

/**
 * A read on a connection of its own, opened read-only for this one statement: an interrupt
 * (node-sqlite3 has no per-statement progress handler) then stops this statement and nothing
 * else. Interrupts repeat until it ends, since one that comes before the statement starts is lost.
 */
function boundedSqlite<T>(storage: string, sql: string, values: unknown[], timeoutMs: number): Promise<T[]> {
  return new Promise<T[]>((resolve, reject) => {
    let interrupter: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const db = new sqlite3.Database(storage, sqlite3.OPEN_READONLY, (err) => {
      if (err) return reject(err);
      db.configure('busyTimeout', 5000); // as the shared connections wait (a WAL checkpoint, a recovery)
      deadline = setTimeout(() => {
        db.interrupt();
        interrupter = setInterval(() => db.interrupt(), 5);
      }, timeoutMs);
      db.all(sql, values, (e: Error | null, rows: T[]) => {
        clearTimeout(deadline);
        clearInterval(interrupter);
        db.close(() => undefined);
        if (!e) return resolve(rows);
        reject((e as { code?: string }).code === 'SQLITE_INTERRUPT' ? new StatementTimeoutError(timeoutMs) : e);
      });
    });
  });
}

function sequelizeSql(sequelize: Sequelize): Sql {
  const duplicates = (err: unknown) => {
    if (!(err instanceof UniqueConstraintError)) throw err;
    const detail = `${Object.keys(err.fields ?? {}).join(' ')} ${String((err.parent as { message?: string } | undefined)?.message ?? '')}`;
    throw new DuplicateKeyError(detail);
  };
  // SQLite opens no statement transactions (Database.transaction is its serialized Sequelize one)
  const sequelizeTx = (tx?: Tx): Transaction | undefined => {
    const handle = tx && held(tx);
    if (handle === undefined || handle instanceof Transaction) return handle;
    throw new Error('a statement transaction reached the SQLite dialect');
  };
  // bound by the driver as $1, $2, ... (Sequelize's `replacements` would splice escaped values
  // into the text, where a NUL ends the statement early)
  const numbered = (sql: string) => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  };
  const select = async <T>(sql: string, values: unknown[], tx?: Tx) =>
    (await sequelize.query(numbered(sql), { bind: values, type: QueryTypes.SELECT, transaction: sequelizeTx(tx) })) as T[];
  const storage = String((sequelize as unknown as { options: { storage?: string } }).options.storage);
  return {
    select,
    selectBounded: <T>(sql: string, values: unknown[], timeoutMs: number) => boundedSqlite<T>(storage, sql, values, timeoutMs),
    async change(sql, values, tx) {
      const type = /^\s*INSERT/i.test(sql) ? QueryTypes.INSERT : QueryTypes.UPDATE;
      const result = await sequelize.query(numbered(sql), { bind: values, type, transaction: sequelizeTx(tx) }).catch(duplicates);
      return Number((result as unknown as [unknown, number])[1]);
    },
    async insert(sql, values, tx) {
      // a raw INSERT answers [lastID, changes] on SQLite
      const result = await sequelize.query(numbered(sql), { bind: values, type: QueryTypes.INSERT, transaction: sequelizeTx(tx) }).catch(duplicates);
      return Number((result as unknown as [number, number])[0]);
    },
    time: (date) => sqlTime('sqlite', date),
    forUpdate: '',
    later: () => '?',
    dialect: 'sqlite',
  };
}

export function createSql(sequelize: Sequelize, options: SqlOptions = {}): Sql {
  return sequelize.getDialect() === 'mysql' ? mysqlSql(sequelize, options) : sequelizeSql(sequelize);
}
