import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The audit log (docs/audit.md): one row per change a client or an operator made, written in the
 * change's own transaction. It names records by id and has no foreign key to them: deleting or
 * erasing a record leaves what was done to it on file.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('audit_log', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    occurred_at: { type: DataTypes.DATE(6), allowNull: false },
    event_type: { type: DataTypes.STRING(64), allowNull: false },
    event_version: { type: DataTypes.INTEGER, allowNull: false },
    actor_kind: { type: DataTypes.STRING(16), allowNull: false },
    actor_id: { type: DataTypes.STRING(255), allowNull: false },
    // the client a person acted through, when the actor is an account
    actor_client: { type: DataTypes.STRING(255), allowNull: true },
    subject_kind: { type: DataTypes.STRING(16), allowNull: false },
    subject_id: { type: DataTypes.STRING(255), allowNull: false },
    data: { type: DataTypes.TEXT, allowNull: false },
    address: { type: DataTypes.STRING(64), allowNull: true },
    request_id: { type: DataTypes.STRING(64), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  // newest first per application, and the same narrowed to one subject or one actor
  await qi.addIndex('audit_log', ['application_id', 'id'], { name: 'audit_log_app' });
  await qi.addIndex('audit_log', ['application_id', 'subject_kind', 'subject_id', 'id'], { name: 'audit_log_subject' });
  await qi.addIndex('audit_log', ['application_id', 'actor_kind', 'actor_id', 'id'], { name: 'audit_log_actor' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('audit_log');
}
