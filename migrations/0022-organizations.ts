import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Organizations (docs/organizations.md): an application's customers, their members and each
 * member's roles, the roles the application defines with their permissions, invitations (their
 * link stored as a hash only), and the email domains an organization claims.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const bin = { charset: 'utf8mb4', collate: 'utf8mb4_bin' };
  const time = (allowNull: boolean) => ({ type: DataTypes.DATE(6), allowNull });
  const app = { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' };
  await qi.createTable('organizations', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    // its public id (org_…)
    organization_id: { type: DataTypes.STRING(40), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: false },
    slug: { type: DataTypes.STRING(64), allowNull: false },
    logo_url: { type: DataTypes.STRING(2048), allowNull: true },
    metadata: { type: DataTypes.TEXT, allowNull: false },
    // just-in-time membership: an account signing in with a verified address at a verified domain joins with default_roles
    join_by_domain: { type: DataTypes.BOOLEAN, allowNull: false },
    default_roles: { type: DataTypes.TEXT, allowNull: false },
    created_at: time(false),
    updated_at: time(false),
  }, bin);
  await qi.addIndex('organizations', ['application_id', 'organization_id'], { name: 'organizations_id', unique: true });
  await qi.addIndex('organizations', ['application_id', 'slug'], { name: 'organizations_slug', unique: true });
  // pages in the order made (the key follows the application in the index)
  await qi.addIndex('organizations', ['application_id'], { name: 'organizations_application' });

  await qi.createTable('organization_members', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    // how the account joined: api, invitation, domain (just in time), created (made the organization)
    joined_by: { type: DataTypes.STRING(16), allowNull: false },
    // when the account last made this organization its active one (the newest is active)
    active_at: time(true),
    created_at: time(false),
    updated_at: time(false),
  }, bin);
  await qi.addIndex('organization_members', ['organization_id', 'entity_id'], { name: 'organization_members_pair', unique: true });
  await qi.addIndex('organization_members', ['entity_id'], { name: 'organization_members_account' });
  await qi.addIndex('organization_members', ['organization_id'], { name: 'organization_members_organization' });

  // who left an organization, or was removed from it: joining by the domain of an address does not bring them back
  await qi.createTable('organization_departures', {
    organization_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' },
    entity_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'entities', key: 'id' }, onDelete: 'CASCADE' },
    departed_at: time(false),
  }, bin);

  // each role a member holds in its organization; an organization's owners are read by (organization, role)
  await qi.createTable('organization_member_roles', {
    member_id: { type: DataTypes.BIGINT, allowNull: false, primaryKey: true, references: { model: 'organization_members', key: 'id' }, onDelete: 'CASCADE' },
    role: { type: DataTypes.STRING(64), allowNull: false, primaryKey: true },
    organization_id: { type: DataTypes.BIGINT, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false },
  }, bin);
  await qi.addIndex('organization_member_roles', ['organization_id', 'role'], { name: 'organization_member_roles_role' });
  await qi.addIndex('organization_member_roles', ['application_id', 'role'], { name: 'organization_member_roles_app' });

  // the roles an application defines (owner, admin and member are built in), each with its permissions
  await qi.createTable('organization_roles', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    name: { type: DataTypes.STRING(64), allowNull: false },
    description: { type: DataTypes.STRING(200), allowNull: false },
    permissions: { type: DataTypes.TEXT, allowNull: false },
    created_at: time(false),
    updated_at: time(false),
  }, bin);
  await qi.addIndex('organization_roles', ['application_id', 'name'], { name: 'organization_roles_name', unique: true });

  await qi.createTable('organization_invitations', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' },
    // its public id (inv_…)
    invitation_id: { type: DataTypes.STRING(40), allowNull: false },
    email: { type: DataTypes.STRING(254), allowNull: false },
    roles: { type: DataTypes.TEXT, allowNull: false },
    // who invited: the account (a member), if one did; `inviter` names it as `account:ID`, `client:ID` or `operator:NAME`
    inviter_entity_id: { type: DataTypes.BIGINT, allowNull: true },
    inviter: { type: DataTypes.STRING(128), allowNull: false },
    locale: { type: DataTypes.STRING(16), allowNull: false },
    // SHA-256 of the link's secret: the link is a bearer value, never stored as it is
    token_hash: { type: DataTypes.STRING(64), allowNull: false },
    // pending, accepted or revoked (expired: pending past expires_at)
    state: { type: DataTypes.STRING(16), allowNull: false },
    expires_at: time(false),
    accepted_by: { type: DataTypes.BIGINT, allowNull: true },
    finished_at: time(true),
    created_at: time(false),
  }, bin);
  await qi.addIndex('organization_invitations', ['token_hash'], { name: 'organization_invitations_token', unique: true });
  await qi.addIndex('organization_invitations', ['application_id', 'invitation_id'], { name: 'organization_invitations_id', unique: true });
  await qi.addIndex('organization_invitations', ['organization_id', 'created_at'], { name: 'organization_invitations_time' });
  await qi.addIndex('organization_invitations', ['organization_id'], { name: 'organization_invitations_organization' });
  await qi.addIndex('organization_invitations', ['application_id', 'inviter', 'created_at'], { name: 'organization_invitations_inviter' });

  await qi.createTable('organization_domains', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    organization_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'organizations', key: 'id' }, onDelete: 'CASCADE' },
    domain: { type: DataTypes.STRING(253), allowNull: false },
    // how it was verified (operator, member), and when; unverified until then
    verified_by: { type: DataTypes.STRING(16), allowNull: true },
    verified_at: time(true),
    created_at: time(false),
  }, bin);
  await qi.addIndex('organization_domains', ['organization_id', 'domain'], { name: 'organization_domains_pair', unique: true });
  await qi.addIndex('organization_domains', ['application_id', 'domain'], { name: 'organization_domains_domain' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('organization_domains');
  await qi.dropTable('organization_invitations');
  await qi.dropTable('organization_roles');
  await qi.dropTable('organization_departures');
  await qi.dropTable('organization_member_roles');
  await qi.dropTable('organization_members');
  await qi.dropTable('organizations');
}
