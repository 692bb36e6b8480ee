import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Imports' progress (docs/import.md#resuming): per application and import key, the lines of the
 * file done and the records created, written in the transaction of each batch.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('imports', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    import_key: { type: DataTypes.STRING(64), allowNull: false },
    lines_done: { type: DataTypes.BIGINT, allowNull: false },
    created: { type: DataTypes.BIGINT, allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('imports', ['application_id', 'import_key'], { name: 'imports_key', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('imports');
}
