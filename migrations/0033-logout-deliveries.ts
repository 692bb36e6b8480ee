import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Back-channel logout (docs/openid-connect.md#back-channel-logout): one row per logout token owed
 * to a client when a session of an account ends (the client, the account's public id and the
 * session id it was given, the token's `jti`), with its attempts as the webhooks' deliveries keep
 * theirs. And the provider's objects found by their account (its sessions, read when they end).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('logout_deliveries', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    client_id: { type: DataTypes.STRING(64), allowNull: false },
    account_id: { type: DataTypes.BIGINT, allowNull: true },
    subject: { type: DataTypes.STRING(64), allowNull: true },
    sid: { type: DataTypes.STRING(64), allowNull: true },
    jti: { type: DataTypes.STRING(40), allowNull: false },
    state: { type: DataTypes.STRING(16), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    last_attempt_at: { type: DataTypes.DATE(6), allowNull: true },
    last_status: { type: DataTypes.INTEGER, allowNull: true },
    last_ms: { type: DataTypes.INTEGER, allowNull: true },
    last_answer: { type: DataTypes.STRING(300), allowNull: true },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    finished_at: { type: DataTypes.DATE(6), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('logout_deliveries', ['jti'], { name: 'logout_deliveries_jti', unique: true });
  await qi.addIndex('logout_deliveries', ['application_id', 'client_id', 'id'], { name: 'logout_deliveries_client' });
  await qi.addIndex('logout_deliveries', ['application_id', 'account_id'], { name: 'logout_deliveries_account' });
  await qi.addIndex('logout_deliveries', ['finished_at'], { name: 'logout_deliveries_finished' });
  // an account's sessions and grants at the provider, found when they end (a sign-out everywhere, a disable, an erasure)
  await qi.addIndex('oidc_state', ['application_id', 'entity_id'], { name: 'oidc_state_entity' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('oidc_state', 'oidc_state_entity');
  await qi.dropTable('logout_deliveries');
}
