import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * The refresh-token rotation in one round trip on MySQL/MariaDB: the stored procedure
 * gh_rotate_refresh (migrations/procedures/gh_rotate_refresh.1.sql) spends the presented token and
 * inserts its successors in one transaction, committed before it answers. Four round trips (START
 * TRANSACTION, UPDATE, INSERT, COMMIT) become one CALL; docs/decisions.md has the measurements.
 * SQLite, and MySQL with DATABASE_PROCEDURES=off, run the same statements from the application.
 * Creating it needs the CREATE ROUTINE privilege, which a database owner has.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_refresh', 1);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  if (qi.sequelize.getDialect() !== 'mysql') return;
  await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_rotate_refresh');
}
