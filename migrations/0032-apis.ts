import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The APIs of an application (docs/openid-connect.md#apis): resource servers, each named by its
 * resource indicator (RFC 8707, an absolute URI, unique per application and found by its SHA-256)
 * with the scopes it defines, the scopes each client may ask for its own tokens (the client
 * credentials grant, as JSON: client id to scopes) and the lifetime of its access tokens (JWTs,
 * RFC 9068).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('apis', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    public_id: { type: DataTypes.STRING(40), allowNull: false },
    identifier_hash: { type: DataTypes.STRING(64), allowNull: false },
    identifier: { type: DataTypes.STRING(255), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: false },
    scopes: { type: DataTypes.TEXT, allowNull: false },
    token_seconds: { type: DataTypes.INTEGER, allowNull: true },
    client_scopes: { type: DataTypes.TEXT, allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('apis', ['application_id', 'public_id'], { name: 'apis_public_id', unique: true });
  await qi.addIndex('apis', ['application_id', 'identifier_hash'], { name: 'apis_identifier', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('apis');
}
