import fs from 'node:fs';
import path from 'node:path';
import { Sequelize, Transaction } from 'sequelize';
import type { Config } from '../config';
import type { Logger } from '../logger';

/**
 * The Sequelize instance for either backend. SQLite runs in WAL mode with a busy timeout and
 * IMMEDIATE transactions (a write transaction takes the write lock up front instead of failing
 * with SQLITE_BUSY half-way); MySQL/MariaDB store and read every DATETIME in UTC.
 */
export function createSequelize(database: Config['database'], logger?: Logger): Sequelize {
  const logging = logger ? (sql: string) => logger.trace({ sql }, 'sql') : false;
  if (database.dialect === 'sqlite') {
    fs.mkdirSync(path.dirname(database.storage), { recursive: true });
    return new Sequelize({
      dialect: 'sqlite',
      storage: database.storage,
      logging,
      transactionType: Transaction.TYPES.IMMEDIATE,
      retry: { max: 10, match: [/SQLITE_BUSY/] },
      hooks: {
        afterConnect: async (connection: unknown) => {
          const db = connection as { exec(sql: string, cb: (err: Error | null) => void): void };
          await new Promise<void>((resolve, reject) =>
            db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;', (err) =>
              err ? reject(err) : resolve(),
            ),
          );
        },
      },
    });
  }
  return new Sequelize(database.url, {
    dialect: 'mysql',
    logging,
    timezone: '+00:00',
    dialectOptions: { charset: 'utf8mb4', dateStrings: false },
    pool: { max: 20, min: 0, acquire: 10_000, idle: 10_000 },
    define: { charset: 'utf8mb4', collate: 'utf8mb4_bin' },
  });
}
