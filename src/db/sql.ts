import { QueryTypes, UniqueConstraintError, type Sequelize, type Transaction } from 'sequelize';

/**
 * Raw SQL for the statements on every sign-in and token request. On MySQL/MariaDB they go
 * straight to the mysql2 connection Sequelize's pool (or the caller's transaction) holds, with the
 * driver's own `?` escaping and type casting: Sequelize's query layer (option cloning, hooks,
 * moment-based date parsing) cost as much main-thread time as the statements themselves. On SQLite
 * they go through `sequelize.query`. Values are always bound as `?`, never spliced in.
 */
export interface Sql {
  select<T>(sql: string, values: unknown[], tx?: Transaction): Promise<T[]>;
  /** Runs an INSERT, UPDATE or DELETE and answers the number of rows it changed. */
  change(sql: string, values: unknown[], tx?: Transaction): Promise<number>;
  /** Runs an INSERT of one row and answers its auto-increment id. */
  insert(sql: string, values: unknown[], tx?: Transaction): Promise<number>;
}

/** A unique index refused a row (MySQL ER_DUP_ENTRY, SQLite UNIQUE constraint). */
export class DuplicateKeyError extends Error {}

/** A driver error without the statement text (which holds bound values, such as password hashes). */
export class SqlError extends Error {
  constructor(message: string, readonly errno: number | undefined, readonly code: string | undefined) {
    super(message);
  }
}

interface MysqlResult { affectedRows?: number; insertId?: number }
interface MysqlConnection {
  query(options: { sql: string; values: unknown[]; typeCast: typeof driverTypes }, cb: (err: MysqlError | null, result: unknown) => void): void;
}
interface MysqlError { message: string; sqlMessage?: string; errno?: number; code?: string }
interface Pool { getConnection(options: { type: 'write' }): Promise<MysqlConnection>; releaseConnection(c: MysqlConnection): void }

const ER_DUP_ENTRY = 1062;

/**
 * The driver's own conversions (DATETIME to Date in the connection's UTC, numbers to numbers)
 * instead of Sequelize's connection-wide moment-based typeCast. It must be a function: mysql2
 * replaces any other per-query value with the connection's function while compiling a row parser,
 * and then never finds that parser in its cache again (one compile per query).
 */
const driverTypes = (_field: unknown, next: () => unknown) => next();

function mysqlSql(sequelize: Sequelize): Sql {
  const pool = (sequelize as unknown as { connectionManager: Pool }).connectionManager;
  const run = (connection: MysqlConnection, sql: string, values: unknown[]) => new Promise<unknown>((resolve, reject) => {
    connection.query({ sql, values, typeCast: driverTypes }, (err, result) => {
      if (!err) return resolve(result);
      const message = err.sqlMessage ?? err.message;
      reject(err.errno === ER_DUP_ENTRY ? new DuplicateKeyError(message) : new SqlError(message, err.errno, err.code));
    });
  });
  const exec = async (sql: string, values: unknown[], tx?: Transaction): Promise<unknown> => {
    const held = (tx as unknown as { connection?: MysqlConnection } | undefined)?.connection;
    if (held) return run(held, sql, values);
    const connection = await pool.getConnection({ type: 'write' });
    try {
      return await run(connection, sql, values);
    } finally {
      pool.releaseConnection(connection);
    }
  };
  return {
    select: async <T>(sql: string, values: unknown[], tx?: Transaction) => (await exec(sql, values, tx)) as T[],
    change: async (sql, values, tx) => ((await exec(sql, values, tx)) as MysqlResult).affectedRows ?? 0,
    insert: async (sql, values, tx) => Number(((await exec(sql, values, tx)) as MysqlResult).insertId),
  };
}

function sequelizeSql(sequelize: Sequelize): Sql {
  const duplicates = (err: unknown) => {
    if (!(err instanceof UniqueConstraintError)) throw err;
    const detail = `${Object.keys(err.fields ?? {}).join(' ')} ${String((err.parent as { message?: string } | undefined)?.message ?? '')}`;
    throw new DuplicateKeyError(detail);
  };
  return {
    select: async <T>(sql: string, values: unknown[], transaction?: Transaction) =>
      (await sequelize.query(sql, { replacements: values, type: QueryTypes.SELECT, transaction })) as T[],
    async change(sql, values, transaction) {
      const type = /^\s*INSERT/i.test(sql) ? QueryTypes.INSERT : QueryTypes.UPDATE;
      const [, changes] = (await sequelize.query(sql, { replacements: values, type, transaction }).catch(duplicates)) as unknown as [unknown, number];
      return Number(changes);
    },
    async insert(sql, values, transaction) {
      // a raw INSERT answers [lastID, changes] on SQLite
      const [id] = (await sequelize.query(sql, { replacements: values, type: QueryTypes.INSERT, transaction }).catch(duplicates)) as unknown as [number, number];
      return Number(id);
    },
  };
}

export function createSql(sequelize: Sequelize): Sql {
  return sequelize.getDialect() === 'mysql' ? mysqlSql(sequelize) : sequelizeSql(sequelize);
}
