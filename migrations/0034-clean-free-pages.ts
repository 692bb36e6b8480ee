import type { QueryInterface } from 'sequelize';

/**
 * The embedded database (SQLite) is rebuilt once, so that its free space holds no deleted bytes.
 * `secure_delete` zeroes only what is deleted while it is on: a database made before it was turned
 * on still keeps, in its free pages and in the gaps of its pages in use, the rows deleted back then
 * (old addresses, earlier versions of records, erased people), and an erasure today could not
 * reach them. VACUUM writes every row again into a new file, leaving no free page and no gap.
 *
 * A migration rather than a step at start: it runs once per database and is recorded with the
 * others (schema_migrations), on start in the embedded default and with `gatehouse migrate`. The
 * runner opens no transaction around a migration, which VACUUM cannot run inside. It costs one
 * rewrite of the file (free disk space about twice its size for that while); a new database is
 * rebuilt in a moment.
 *
 * The rebuilt pages reach the file through the write-ahead log: the log is then checkpointed and
 * truncated, so neither file keeps the old pages. Should a reader hold the log meanwhile, the
 * erasure's job truncates it (and checks that it did) before it finishes.
 *
 * MariaDB and MySQL: nothing (docs/lifecycle.md says how an operator rebuilds their tables).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  if (qi.sequelize.getDialect() !== 'sqlite') return;
  await qi.sequelize.query('VACUUM');
  await qi.sequelize.query('PRAGMA wal_checkpoint(TRUNCATE)');
}

export async function down(): Promise<void> {
  // nothing to undo: the rows are the same, only the file's free space was cleared
}
