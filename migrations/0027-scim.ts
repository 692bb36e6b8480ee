import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * SCIM 2.0 (docs/scim.md): an organization's directory provisions its people. Its bearer tokens
 * (stored as a SHA-256 digest only); its users, each an account of the application and a member
 * of the organization, with the resource as the directory last wrote it (JSON) and the columns
 * its filters look up (userName, externalId and address lower-cased); its groups and their
 * members; and the organization's mapping of groups to its roles.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const bin = { charset: 'utf8mb4', collate: 'utf8mb4_bin' };
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  const time = (allowNull: boolean) => ({ type: DataTypes.DATE(6), allowNull });
  const app = { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' };
  const organization = { type: DataTypes.BIGINT, allowNull: false, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' };

  await qi.createTable('scim_tokens', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: organization,
    // its public id (scim_…), what lists and the audit name
    public_id: { type: DataTypes.STRING(40), allowNull: false },
    description: { type: DataTypes.STRING(200), allowNull: false },
    // SHA-256 of the bearer token: the token itself is shown once and never stored
    token_hash: { type: DataTypes.STRING(64), allowNull: false },
    created_by: { type: DataTypes.STRING(128), allowNull: false },
    created_at: time(false),
    last_used_at: time(true),
    revoked_at: time(true),
  }, bin);
  await qi.addIndex('scim_tokens', ['token_hash'], { name: 'scim_tokens_hash', unique: true });
  await qi.addIndex('scim_tokens', ['application_id', 'public_id'], { name: 'scim_tokens_id', unique: true });
  await qi.addIndex('scim_tokens', ['organization_id'], { name: 'scim_tokens_organization' });

  await qi.createTable('scim_users', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: organization,
    entity_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    // the resource's id: the account's uuid
    resource_id: { type: DataTypes.STRING(36), allowNull: false },
    user_name: { type: DataTypes.STRING(255), allowNull: false },
    user_name_key: { type: DataTypes.STRING(255), allowNull: false },
    external_id: { type: DataTypes.STRING(255), allowNull: true },
    email_key: { type: DataTypes.STRING(254), allowNull: true },
    active: { type: DataTypes.BOOLEAN, allowNull: false },
    // the resource as written (the password never), JSON
    data: { type: longText, allowNull: false },
    version: { type: DataTypes.INTEGER, allowNull: false },
    // the account was made by this directory (not an account it found by its address)
    owned: { type: DataTypes.BOOLEAN, allowNull: false },
    // the member's roles while deactivated (its membership is gone until reactivated), JSON
    suspended_roles: { type: DataTypes.TEXT, allowNull: true },
    created_at: time(false),
    updated_at: time(false),
  }, bin);
  await qi.addIndex('scim_users', ['organization_id', 'user_name_key'], { name: 'scim_users_user_name', unique: true });
  await qi.addIndex('scim_users', ['organization_id', 'resource_id'], { name: 'scim_users_resource', unique: true });
  await qi.addIndex('scim_users', ['organization_id', 'entity_id'], { name: 'scim_users_account', unique: true });
  await qi.addIndex('scim_users', ['organization_id', 'external_id'], { name: 'scim_users_external' });
  await qi.addIndex('scim_users', ['organization_id', 'email_key'], { name: 'scim_users_email' });
  await qi.addIndex('scim_users', ['entity_id'], { name: 'scim_users_entity' });

  // every address a user's emails name, lower-cased: what `emails.value eq` finds by index
  await qi.createTable('scim_user_emails', {
    user_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'scim_users', key: 'id' }, onDelete: 'CASCADE' },
    email_key: { type: DataTypes.STRING(254), allowNull: false, primaryKey: true },
    organization_id: { type: DataTypes.BIGINT, allowNull: false },
  }, bin);
  await qi.addIndex('scim_user_emails', ['organization_id', 'email_key'], { name: 'scim_user_emails_address' });

  await qi.createTable('scim_groups', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: organization,
    resource_id: { type: DataTypes.STRING(36), allowNull: false },
    display_name: { type: DataTypes.STRING(255), allowNull: false },
    display_name_key: { type: DataTypes.STRING(255), allowNull: false },
    external_id: { type: DataTypes.STRING(255), allowNull: true },
    version: { type: DataTypes.INTEGER, allowNull: false },
    created_at: time(false),
    updated_at: time(false),
  }, bin);
  await qi.addIndex('scim_groups', ['organization_id', 'display_name_key'], { name: 'scim_groups_name', unique: true });
  await qi.addIndex('scim_groups', ['organization_id', 'resource_id'], { name: 'scim_groups_resource', unique: true });
  await qi.addIndex('scim_groups', ['organization_id', 'external_id'], { name: 'scim_groups_external' });

  await qi.createTable('scim_group_members', {
    group_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'scim_groups', key: 'id' }, onDelete: 'CASCADE' },
    user_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'scim_users', key: 'id' }, onDelete: 'CASCADE' },
  }, bin);
  await qi.addIndex('scim_group_members', ['user_id'], { name: 'scim_group_members_user' });

  // the organization's groups mapped to its roles ({"Admins": ["admin"]}), JSON
  await qi.createTable('scim_settings', {
    organization_id: { ...organization, primaryKey: true },
    application_id: app,
    group_roles: { type: DataTypes.TEXT, allowNull: false },
    updated_at: time(false),
  }, bin);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('scim_settings');
  await qi.dropTable('scim_group_members');
  await qi.dropTable('scim_groups');
  await qi.dropTable('scim_user_emails');
  await qi.dropTable('scim_users');
  await qi.dropTable('scim_tokens');
}
