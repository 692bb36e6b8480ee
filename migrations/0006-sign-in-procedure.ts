import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * A sign-in's write in one round trip on MySQL/MariaDB: the stored procedure gh_sign_in
 * (migrations/procedures/gh_sign_in.1.sql) writes lastLogin (and a rehashed password) into the
 * record if it is still at the version the password check read, inserts the sign-in's credentials
 * and the outbox row of the record's new snapshot, and commits before it answers. Six round trips
 * (START TRANSACTION, UPDATE, INSERT, SELECT of the identities, INSERT, COMMIT) become one CALL;
 * docs/decisions.md has the measurements. SQLite, and MySQL with DATABASE_PROCEDURES=off, run a
 * transaction of statements instead. Creating it needs the CREATE ROUTINE privilege.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_sign_in', 1);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  if (qi.sequelize.getDialect() !== 'mysql') return;
  await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_sign_in');
}
