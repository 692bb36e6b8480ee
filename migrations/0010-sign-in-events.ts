import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * gh_sign_in version 2 (migrations/procedures/gh_sign_in.2.sql): a sign-in writes any number of
 * outbox rows, given as one JSON array, instead of exactly one snapshot row.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_sign_in', 2);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_sign_in', 1);
}
