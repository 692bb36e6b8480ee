import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The SAML service providers of an application (docs/saml.md#service-providers): each registered
 * from its metadata, kept as given and as read (its endpoints, certificates and what it asks for),
 * found by the SHA-256 of its entity id (unique per application), with the salt of its persistent
 * NameIDs.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  await qi.createTable('saml_service_providers', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    public_id: { type: DataTypes.STRING(40), allowNull: false },
    entity_hash: { type: DataTypes.STRING(64), allowNull: false },
    entity_id: { type: DataTypes.STRING(1024), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: false },
    metadata: { type: longText, allowNull: false },
    descriptor: { type: DataTypes.TEXT, allowNull: false },
    name_id_format: { type: DataTypes.STRING(16), allowNull: true },
    attributes: { type: DataTypes.TEXT, allowNull: true },
    persistent_salt: { type: DataTypes.STRING(64), allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('saml_service_providers', ['application_id', 'public_id'], { name: 'saml_sp_public_id', unique: true });
  await qi.addIndex('saml_service_providers', ['application_id', 'entity_hash'], { name: 'saml_sp_entity', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('saml_service_providers');
}
