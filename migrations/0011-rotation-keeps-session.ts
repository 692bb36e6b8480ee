import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * gh_rotate_refresh version 3 (migrations/procedures/gh_rotate_refresh.3.sql): a rotation's
 * successor tokens carry the spent token's extra, the session's facts (how and when the person
 * signed in), as the portable path does.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_refresh', 3);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_refresh', 2);
}
