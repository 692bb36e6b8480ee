import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Erasures (docs/lifecycle.md#erase): the tombstone of a record whose personal data was removed for
 * good — the application, the record's id and when, nothing of the person — one per record.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('erasures', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, allowNull: false },
    erased_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('erasures', ['application_id', 'entity_id'], { name: 'erasures_record', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('erasures');
}
