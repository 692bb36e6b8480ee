import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * What the OpenID provider keeps besides codes and tokens (docs/openid-connect.md#storage): its
 * browser sessions, interactions in progress, grants, replay markers, pushed requests. Each row is
 * one object of a `model`, found by the SHA-256 of its id (a session's id is a cookie's value) or of
 * its `uid`, with its payload as JSON and its expiry; `consumed_at` marks one spent once. Codes and
 * tokens are credentials, with the original API's.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  await qi.createTable('oidc_state', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    model: { type: DataTypes.STRING(32), allowNull: false },
    id_hash: { type: DataTypes.STRING(64), allowNull: false },
    uid_hash: { type: DataTypes.STRING(64), allowNull: true },
    grant_id: { type: DataTypes.STRING(64), allowNull: true },
    entity_id: { type: DataTypes.BIGINT, allowNull: true },
    payload: { type: longText, allowNull: false },
    expires_at: { type: DataTypes.DATE(6), allowNull: false },
    consumed_at: { type: DataTypes.DATE(6), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('oidc_state', ['application_id', 'model', 'id_hash'], { name: 'oidc_state_id', unique: true });
  await qi.addIndex('oidc_state', ['application_id', 'model', 'uid_hash'], { name: 'oidc_state_uid' });
  await qi.addIndex('oidc_state', ['application_id', 'grant_id'], { name: 'oidc_state_grant' });
  await qi.addIndex('oidc_state', ['expires_at'], { name: 'oidc_state_expires' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('oidc_state');
}
