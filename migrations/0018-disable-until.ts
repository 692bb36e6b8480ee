import { DataTypes, type QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * An operator's disable may say until when (`disabled_until`, null: until enabled) and why
 * (`disabled_reason`); a disable whose time has passed is over without anyone enabling it.
 * gh_rotate_with_event version 2 lets such an account's refresh tokens rotate again.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  await qi.addColumn('entities', 'disabled_until', { type: DataTypes.DATE(6), allowNull: true });
  await qi.addColumn('entities', 'disabled_reason', { type: DataTypes.STRING(500), allowNull: true });
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_with_event', 2);
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) await installProcedure(qi, 'gh_rotate_with_event', 1);
  await qi.removeColumn('entities', 'disabled_reason');
  await qi.removeColumn('entities', 'disabled_until');
}
