import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The OpenID provider's signing keys (docs/openid-connect.md#keys), per application: each private
 * key sealed with SECRET_KEY, its public JWK in clear for the JWKS. `slot` names the key's place
 * while it has one (`current:ES256`, `next:RS256`, …; one key per slot, so pods starting or
 * rotating at once cannot both win); a retired key has none and stays published until
 * `retired_at` plus the longest lifetime of what it signed.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('signing_keys', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    kid: { type: DataTypes.STRING(64), allowNull: false },
    alg: { type: DataTypes.STRING(8), allowNull: false },
    slot: { type: DataTypes.STRING(16), allowNull: true },
    public_jwk: { type: DataTypes.TEXT, allowNull: false },
    private_sealed: { type: DataTypes.TEXT, allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    retired_at: { type: DataTypes.DATE(6), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('signing_keys', ['application_id', 'kid'], { name: 'signing_keys_kid', unique: true });
  // NULL slots (retired keys) never collide
  await qi.addIndex('signing_keys', ['application_id', 'slot'], { name: 'signing_keys_slot', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('signing_keys');
}
