import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * An organization's enterprise connections (docs/organizations.md#connections): its own identity
 * provider, SAML or OpenID, that its people sign in through. What is not secret (the identity
 * provider's metadata as given and as read, the issuer and client id, the attribute and role
 * mappings) is JSON in `settings`; an OpenID client secret is sealed. `required`: the
 * organization's members sign in through it only.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  await qi.createTable('organization_connections', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    organization_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' },
    public_id: { type: DataTypes.STRING(40), allowNull: false },
    type: { type: DataTypes.STRING(8), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: false },
    settings: { type: longText, allowNull: false },
    secret_sealed: { type: DataTypes.TEXT, allowNull: true },
    required: { type: DataTypes.BOOLEAN, allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('organization_connections', ['application_id', 'public_id'], { name: 'organization_connections_id', unique: true });
  await qi.addIndex('organization_connections', ['organization_id'], { name: 'organization_connections_organization' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('organization_connections');
}
