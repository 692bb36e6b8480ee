import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Indexed attributes (docs/entity-filters.md#indexed-attributes): an operator declares attributes
 * of an application's records to index; the index is a table Gatehouse owns rather than a column
 * added to `entities` at run time (no DDL while serving; the same on SQLite, MariaDB and Galera).
 * - `indexed_attributes`: one row per declared attribute (a dotted path such as
 *   `primaryAddress.country`), `building` until every existing record has its value (built in
 *   batches by the maintenance worker, `built_to` the last record id done), then `ready`;
 *   `removing` while its values are deleted in batches, then gone.
 * - `attribute_values`: one row per record and indexed attribute: the value's kind (0 none or
 *   null, 1 string, 2 number, 3 boolean, 4 an object or array) and the value, a string by its first
 *   191 characters (what an index key holds; the filter checks the whole value), a number or a
 *   boolean (0 or 1) as a double. Searched by (attribute, kind, value).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const bin = { charset: 'utf8mb4', collate: 'utf8mb4_bin' };
  await qi.createTable('indexed_attributes', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    name: { type: DataTypes.STRING(191), allowNull: false },
    state: { type: DataTypes.STRING(16), allowNull: false },
    built_to: { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    ready_at: { type: DataTypes.DATE(6), allowNull: true },
    // an index being removed (state `removing`): its values are deleted in batches from some seconds after it
    removed_at: { type: DataTypes.DATE(6), allowNull: true },
  }, bin);
  await qi.addIndex('indexed_attributes', ['application_id', 'name'], { name: 'indexed_attributes_name', unique: true });

  await qi.createTable('attribute_values', {
    attribute_id: { type: DataTypes.BIGINT, primaryKey: true, allowNull: false, references: { model: 'indexed_attributes', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, primaryKey: true, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    kind: { type: DataTypes.TINYINT, allowNull: false },
    text_value: { type: DataTypes.STRING(191), allowNull: true },
    number_value: { type: DataTypes.DOUBLE, allowNull: true },
  }, bin);
  await qi.addIndex('attribute_values', ['attribute_id', 'kind', 'text_value'], { name: 'attribute_values_text' });
  await qi.addIndex('attribute_values', ['attribute_id', 'kind', 'number_value'], { name: 'attribute_values_number' });
  // a record's rows, for the foreign key's cascade when it is deleted
  await qi.addIndex('attribute_values', ['entity_id'], { name: 'attribute_values_entity' });
  // (no index of entities by application and id for the build: the sign-in's UPDATE … WHERE id = ?
  // AND application_id = ? then locks that index's entry before the row, and two sign-ins of one
  // account deadlock; the build reads in primary-key order, which READ COMMITTED locks row by row)
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('attribute_values');
  await qi.dropTable('indexed_attributes');
}
