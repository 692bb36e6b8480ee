import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Passkeys (docs/passkeys.md): an account's WebAuthn credentials, each a first credential like a
 * password and a second factor. Only public data: the credential's id and public key (COSE,
 * base64url), its signature counter, whether it may be backed up and is, its transports and
 * authenticator model, the person's name for it. It goes with its record. The challenges of a
 * ceremony are credentials (kind `passkey_challenge`).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('passkeys', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    credential_id: { type: DataTypes.STRING(255), allowNull: false },
    public_key: { type: DataTypes.TEXT, allowNull: false },
    counter: { type: DataTypes.BIGINT, allowNull: false },
    device_type: { type: DataTypes.STRING(16), allowNull: false },
    backed_up: { type: DataTypes.BOOLEAN, allowNull: false },
    transports: { type: DataTypes.STRING(255), allowNull: false },
    aaguid: { type: DataTypes.STRING(36), allowNull: false },
    name: { type: DataTypes.STRING(100), allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    last_used_at: { type: DataTypes.DATE(6), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  // a credential id is the authenticator's: one account of the application holds it
  await qi.addIndex('passkeys', ['application_id', 'credential_id'], { name: 'passkeys_credential', unique: true });
  await qi.addIndex('passkeys', ['application_id', 'entity_id'], { name: 'passkeys_account' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('passkeys');
}
