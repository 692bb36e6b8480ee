import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * A user an operator disabled (`gatehouse users:disable`): when, or null. A disabled user cannot
 * sign in and none of its access tokens works.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('entities', 'disabled_at', { type: DataTypes.DATE(6), allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeColumn('entities', 'disabled_at');
}
