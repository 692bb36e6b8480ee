import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * An erasure's tombstone keeps a keyed digest of the record's uuid (HMAC with the secret key, never
 * the uuid itself), so that an erasure asked again by uuid answers that it was done, and when.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('erasures', 'uuid_digest', { type: DataTypes.STRING(64), allowNull: true });
  await qi.addIndex('erasures', ['application_id', 'uuid_digest'], { name: 'erasures_uuid' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('erasures', 'erasures_uuid');
  await qi.removeColumn('erasures', 'uuid_digest');
}
