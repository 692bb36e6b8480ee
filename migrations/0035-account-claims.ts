import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * An account's claim (docs/scaling.md#galera-every-node-a-writer): one row per account, written first by a change whose
 * check counts rows of the account it does not write (its passkeys before one is removed, its
 * memberships, roles and invitations before one more), so that two such changes conflict on every
 * node of a Galera cluster, where a row lock holds on its own node only. Gone with the account.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('account_claims', {
    entity_id: { type: DataTypes.BIGINT, primaryKey: true, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    claimed_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('account_claims');
}
