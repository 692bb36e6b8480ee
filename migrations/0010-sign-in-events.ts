import type { QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * gh_sign_in_events version 1 (migrations/procedures/gh_sign_in_events.1.sql): a sign-in writes any
 * number of outbox rows, given as one JSON array, instead of exactly one snapshot row. A procedure
 * of its own name, not a new version of gh_sign_in: its parameters differ, and the pods of the
 * release before keep calling gh_sign_in until they are replaced (a later migration drops it).
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_sign_in_events', 1);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_sign_in_events');
}
