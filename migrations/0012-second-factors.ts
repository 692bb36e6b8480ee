import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Second factors (docs/second-factor.md): an account's TOTP authenticator, its secret sealed with
 * SECRET_KEY. One per account and kind; it goes with its record. Recovery codes and the tokens of a
 * sign-in waiting for its second factor are credentials (kinds `recovery_code`, `mfa_token`).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('second_factors', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    kind: { type: DataTypes.STRING(16), allowNull: false },
    secret_sealed: { type: DataTypes.TEXT, allowNull: false },
    confirmed_at: { type: DataTypes.DATE(6), allowNull: true },
    last_step: { type: DataTypes.BIGINT, allowNull: true },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('second_factors', ['application_id', 'entity_id', 'kind'], { name: 'second_factors_account', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('second_factors');
}
