import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The APIs of an application (docs/openid-connect.md#apis): resource servers, each named by its
 * resource indicator (RFC 8707, an absolute URI, unique per application and found by its SHA-256)
 * with the scopes it defines, the scopes each client may ask for its own tokens (the client
 * credentials grant, as JSON: client id to scopes) and the lifetime of its access tokens (JWTs,
 * RFC 9068); the application's roles, which give accounts scopes of its APIs, and who holds them.
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
    // role-based access: a person's token has only the scopes their roles give (rbac), and lists them (permissions_in_token)
    rbac: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    permissions_in_token: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    client_scopes: { type: DataTypes.TEXT, allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('apis', ['application_id', 'public_id'], { name: 'apis_public_id', unique: true });
  await qi.addIndex('apis', ['application_id', 'identifier_hash'], { name: 'apis_identifier', unique: true });

  // the application's roles: each gives the accounts holding it scopes of its APIs (permissions, as JSON: API public id to scopes)
  await qi.createTable('app_roles', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    name: { type: DataTypes.STRING(64), allowNull: false },
    description: { type: DataTypes.STRING(200), allowNull: false },
    permissions: { type: DataTypes.TEXT, allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('app_roles', ['application_id', 'name'], { name: 'app_roles_name', unique: true });
  // which accounts hold which roles: one row each, gone with the account or the role
  await qi.createTable('account_roles', {
    entity_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    role_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'app_roles', key: 'id' }, onDelete: 'CASCADE' },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('account_roles', ['role_id'], { name: 'account_roles_role' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('account_roles');
  await qi.dropTable('app_roles');
  await qi.dropTable('apis');
}
