import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * gh_rotate_refresh version 2 (migrations/procedures/gh_rotate_refresh.2.sql): the rotation also
 * requires that the token's user is not disabled, in the same one round trip, so a refresh token a
 * sign-in in flight wrote while its user was being disabled never rotates.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_refresh', 2);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_refresh', 1);
}
