import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * gh_spend_with_event (migrations/procedures/gh_spend_with_event.1.sql): the OpenID provider's
 * code exchange and refresh spend their code or token with its event in one call.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_spend_with_event', 1);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_spend_with_event');
}
