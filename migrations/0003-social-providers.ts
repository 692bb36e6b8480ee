import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Identity providers of the built-in social login application, per application: an OpenID Connect
 * provider found by discovery, or GitHub. The client secret is sealed like API client secrets.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('social_providers', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    name: { type: DataTypes.STRING(64), allowNull: false },
    kind: { type: DataTypes.STRING(16), allowNull: false },
    issuer: { type: DataTypes.STRING(512), allowNull: false },
    client_id: { type: DataTypes.STRING(255), allowNull: false },
    secret_sealed: { type: DataTypes.STRING(1024), allowNull: false },
    scopes: { type: DataTypes.STRING(512), allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('social_providers', ['application_id', 'name'], { unique: true, name: 'social_providers_app_name' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('social_providers');
}
