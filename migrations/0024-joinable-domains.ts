import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Joining by a domain is the application's decision, per claimed domain (docs/organizations.md#domains):
 * `joinable_at` is when the application (its backend or an operator) let accounts at the domain join.
 * A claim the application verified before lets them join as it did; one only a member verified takes
 * nobody in until the application says so.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('organization_domains', 'joinable_at', { type: DataTypes.DATE(6), allowNull: true });
  await qi.sequelize.query("UPDATE organization_domains SET joinable_at = verified_at WHERE verified_by = 'operator'");
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeColumn('organization_domains', 'joinable_at');
}
