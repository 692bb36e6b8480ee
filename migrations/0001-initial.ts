import { DataTypes, QueryInterface } from 'sequelize';

/**
 * The initial schema (applications, clients, flows, records, credentials). Written with portable column types only so it runs
 * unchanged on SQLite, MySQL 8 and MariaDB 10.11: no JSON columns (TEXT holding JSON), no
 * generated columns, no partial indexes; DATETIME(6) for microsecond timestamps in UTC.
 * Never edit a landed migration: add a new one.
 */
const id = { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false };
const appRef = {
  type: DataTypes.BIGINT,
  allowNull: false,
  references: { model: 'applications', key: 'id' },
  onDelete: 'CASCADE',
};
const entityRef = {
  type: DataTypes.BIGINT,
  references: { model: 'entities', key: 'id' },
  onDelete: 'CASCADE',
};
const time = (allowNull = false) => ({ type: DataTypes.DATE(6), allowNull });
// MariaDB may default to latin1; every table is utf8mb4 with exact (binary) comparison.
const tableOptions = { charset: 'utf8mb4', collate: 'utf8mb4_bin' };

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  // MEDIUMTEXT (16 MB) on MySQL/MariaDB, where TEXT stops at 64 KB; SQLite's TEXT has no such limit
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  await qi.createTable('applications', {
    id,
    name: { type: DataTypes.STRING(63), allowNull: false, unique: true },
    settings: { type: DataTypes.TEXT, allowNull: false },
    created_at: time(),
    updated_at: time(),
  }, tableOptions);

  await qi.createTable('clients', {
    id,
    application_id: appRef,
    client_id: { type: DataTypes.STRING(64), allowNull: false, unique: true },
    secret_sealed: { type: DataTypes.STRING(255), allowNull: false },
    description: { type: DataTypes.STRING(1024), allowNull: false },
    features: { type: DataTypes.TEXT, allowNull: false },
    settings: { type: DataTypes.TEXT, allowNull: false },
    created_at: time(),
    updated_at: time(),
  }, tableOptions);
  await qi.addIndex('clients', ['application_id'], { name: 'clients_application' });

  await qi.createTable('flows', {
    id,
    application_id: appRef,
    name: { type: DataTypes.STRING(64), allowNull: false },
    version: { type: DataTypes.INTEGER, allowNull: false },
    definition: { type: longText, allowNull: false },
    checksum: { type: DataTypes.STRING(64), allowNull: false },
    created_at: time(),
  }, tableOptions);
  await qi.addIndex('flows', ['application_id', 'name', 'version'], { unique: true, name: 'flows_app_name_version' });

  await qi.createTable('entities', {
    id,
    application_id: appRef,
    type_name: { type: DataTypes.STRING(64), allowNull: false },
    uuid: { type: DataTypes.STRING(36), allowNull: false, unique: true },
    email: { type: DataTypes.STRING(254) },
    // lower-cased email: the unique key, so uniqueness is case-insensitive on every database
    email_key: { type: DataTypes.STRING(254) },
    username: { type: DataTypes.STRING(191) },
    username_key: { type: DataTypes.STRING(191) },
    password_hash: { type: DataTypes.STRING(255) },
    email_verified: time(true),
    attributes: { type: longText, allowNull: false },
    created: time(),
    last_updated: time(),
  }, tableOptions);
  await qi.addIndex('entities', ['application_id', 'email_key'], { unique: true, name: 'entities_app_email' });
  await qi.addIndex('entities', ['application_id', 'username_key'], { unique: true, name: 'entities_app_username' });

  await qi.createTable('profiles', {
    id,
    application_id: appRef,
    entity_id: { ...entityRef, allowNull: false },
    provider: { type: DataTypes.STRING(64), allowNull: false },
    identifier: { type: DataTypes.STRING(255), allowNull: false },
    data: { type: longText, allowNull: false },
    created_at: time(),
  }, tableOptions);
  await qi.addIndex('profiles', ['application_id', 'identifier'], { unique: true, name: 'profiles_app_identifier' });
  await qi.addIndex('profiles', ['entity_id'], { name: 'profiles_entity' });

  await qi.createTable('credentials', {
    id,
    application_id: appRef,
    kind: { type: DataTypes.STRING(32), allowNull: false },
    value_hash: { type: DataTypes.STRING(64), allowNull: false, unique: true },
    entity_id: { ...entityRef, allowNull: true },
    client_id: { type: DataTypes.BIGINT, allowNull: true, references: { model: 'clients', key: 'id' }, onDelete: 'CASCADE' },
    for_client_id: { type: DataTypes.BIGINT, allowNull: true, references: { model: 'clients', key: 'id' }, onDelete: 'CASCADE' },
    redirect_uri: { type: DataTypes.STRING(2048) },
    extra: { type: DataTypes.TEXT },
    family: { type: DataTypes.STRING(64) },
    expires_at: time(),
    used_at: time(true),
    created_at: time(),
  }, tableOptions);
  await qi.addIndex('credentials', ['expires_at'], { name: 'credentials_expires' });
  await qi.addIndex('credentials', ['family'], { name: 'credentials_family' });
  await qi.addIndex('credentials', ['entity_id'], { name: 'credentials_entity' });

  await qi.createTable('entity_versions', {
    id,
    application_id: appRef,
    entity_id: { type: DataTypes.BIGINT, allowNull: false },
    valid_from: time(),
    snapshot: { type: longText, allowNull: false },
  }, tableOptions);
  await qi.addIndex('entity_versions', ['entity_id', 'valid_from'], { unique: true, name: 'entity_versions_entity_time' });

  await qi.createTable('outbox', {
    id: { type: DataTypes.STRING(36), primaryKey: true, allowNull: false },
    application_id: appRef,
    queue: { type: DataTypes.STRING(32), allowNull: false },
    name: { type: DataTypes.STRING(64), allowNull: false },
    payload: { type: longText, allowNull: false },
    status: { type: DataTypes.STRING(16), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    last_error: { type: DataTypes.STRING(1024) },
    created_at: time(),
    updated_at: time(),
  }, tableOptions);
  await qi.addIndex('outbox', ['status', 'created_at'], { name: 'outbox_status_created' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const table of ['outbox', 'entity_versions', 'credentials', 'profiles', 'entities', 'flows', 'clients', 'applications']) {
    await qi.dropTable(table);
  }
}
