import { randomBytes } from 'node:crypto';
import { event, type Acting } from '../../domain/events';
import { isOwner } from '../../domain/organizations';
import { invalidField, Refusal } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import type { Application } from '../../domain/storage/applications';
import type { StoredOrganization } from '../../domain/storage/organizations';
import type { StoredScimToken } from '../../domain/storage/scim';
import type { Tx } from '../../domain/storage/transactions';
import { authorityIn, knownRolesOf, organizationOf, organizationSubject, type OrgDeps } from '../organizations/common';
import type { Services } from '../services';
import { ScimError } from './common';
import { applyGroupRoles } from './roles';

/**
 * An organization's SCIM tokens and settings (docs/scim.md#tokens): made, listed and revoked by the
 * application (an owner client, an operator) or an owner of the organization. A token is shown
 * once, when made, and stored as its SHA-256 digest; it reaches its organization's users and groups only.
 */

/** At most this many live tokens per organization (one per directory, and one to rotate to). */
export const MAX_LIVE_TOKENS = 5;

/** A token as its owners see it: never the token. */
export interface ScimTokenView { id: string; organizationId: string; description: string; createdBy: string; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null }

const viewOf = (organizationId: string, t: StoredScimToken): ScimTokenView => ({
  id: t.publicId, organizationId, description: t.description, createdBy: t.createdBy, createdAt: t.createdAt, lastUsedAt: t.lastUsedAt, revokedAt: t.revokedAt,
});

const TOKEN = /^ghscim_[A-Za-z0-9_-]{43}$/;

/** Who acts, as a token's `created_by` names it. */
const actorName = (acting: Acting) => {
  const a = acting.actor;
  return (a.kind === 'client' ? `client:${a.clientId}` : a.kind === 'account' ? `account:${a.accountId}` : a.kind === 'operator' ? `operator:${a.name}` : a.kind).slice(0, 128);
};

/** The organization, when who acts is the application or one of its owners. */
async function ownersOrganization(deps: Pick<Services, 'db'>, command: { app: Application; acting: Acting; organizationId: string }, tx?: Tx): Promise<StoredOrganization> {
  const organization = await organizationOf(deps, command.app, command.organizationId, tx);
  const authority = await authorityIn(deps, organization, command.acting, tx);
  if (authority.kind === 'member' && !isOwner(authority.member.roles)) throw new Refusal('forbidden', 'only the organization\'s owners manage its SCIM tokens');
  return organization;
}

/** A new token for the organization's directory; answers it (the only time it is shown) with its view. */
export async function createScimToken(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; description?: string }): Promise<{ token: string; view: ScimTokenView }> {
  const description = (command.description ?? 'SCIM').trim();
  if (description.length === 0 || description.length > 200) throw invalidField('description', 'must be 1 to 200 characters');
  const token = `ghscim_${randomBytes(32).toString('base64url')}`;
  const publicId = `scim_${randomBytes(12).toString('hex')}`;
  return deps.work.run(async (uow) => {
    const organization = await ownersOrganization(deps, command, uow.tx);
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    if ((await deps.db.scim.countLiveTokens(organization.id, uow.tx)) >= MAX_LIVE_TOKENS) throw invalidField('organizationId', `has ${MAX_LIVE_TOKENS} live SCIM tokens already: revoke one first (/organizations/scim/tokens/revoke)`);
    const stored = await deps.db.scim.insertToken({
      applicationId: command.app.id, organizationKey: organization.id, publicId, description, tokenHash: sha256Hex(token), createdBy: actorName(command.acting),
    }, now, uow.tx);
    uow.record(event('scim.token_created', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, token: publicId }));
    return { token, view: viewOf(organization.organizationId, stored) };
  });
}

/** The organization's tokens: every live one, then the revoked ones, newest first; never a token. */
export async function listScimTokens(deps: Pick<Services, 'db'>, command: { app: Application; acting: Acting; organizationId: string }): Promise<ScimTokenView[]> {
  const organization = await ownersOrganization(deps, command);
  return (await deps.db.scim.listTokens(organization.id)).map((t) => viewOf(organization.organizationId, t));
}

/**
 * What the console shows of the application's provisioning (docs/console.md): every organization's
 * tokens (newest first, at most 200) and the directories' latest calls that changed something
 * (their audit entries, newest first).
 */
export async function applicationProvisioning(deps: Pick<Services, 'db'>, command: { app: Application; calls: number }) {
  const [tokens, calls] = await Promise.all([
    deps.db.scim.listTokensOfApplication(command.app.id, 200),
    deps.db.audit.list({ applicationId: command.app.id, actor: { kind: 'scim' }, limit: Math.min(100, Math.max(1, command.calls)) }),
  ]);
  return { tokens: tokens.map((t) => viewOf(t.organizationId, t.token)), calls };
}

/** Revokes a token: the directory's next call with it is refused. */
export async function revokeScimToken(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; tokenId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await ownersOrganization(deps, command, uow.tx);
    const token = /^scim_[0-9a-f]{24}$/.test(command.tokenId) ? await deps.db.scim.findTokenById(command.app.id, command.tokenId, uow.tx) : undefined;
    if (!token || token.organizationKey !== organization.id) throw invalidField('tokenId', 'is not a SCIM token of this organization (/organizations/scim/tokens/list names them)');
    if (!(await deps.db.scim.revokeToken(token, deps.clock.now(), uow.tx))) return;
    uow.record(event('scim.token_revoked', command.app.id, deps.clock.now(), command.acting, organizationSubject(organization), { organization: organization.organizationId, token: token.publicId }));
  });
}

/** The organization's SCIM settings: which of its directory's groups give which of its roles. */
export interface ScimSettingsView { organizationId: string; groupRoles: Record<string, string[]> }

export async function scimSettings(deps: Pick<Services, 'db'>, command: { app: Application; acting: Acting; organizationId: string }): Promise<ScimSettingsView> {
  const organization = await ownersOrganization(deps, command);
  return { organizationId: organization.organizationId, groupRoles: await deps.db.scim.findGroupRoles(organization.id) };
}

/**
 * Maps the directory's groups (by display name, in any case) to the organization's roles
 * (`{"Engineering Admins": ["admin"]}`; `{}` maps none): each provisioned member's roles then follow
 * their groups, at once and at every change of a group.
 */
export async function configureScim(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; groupRoles: string }): Promise<ScimSettingsView> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(command.groupRoles);
  } catch {
    throw invalidField('groupRoles', 'is not JSON: give an object of group names to lists of roles, such as {"Admins":["admin"]}');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidField('groupRoles', 'must be an object of group names to lists of roles, such as {"Admins":["admin"]}');
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > 100) throw invalidField('groupRoles', 'maps more than 100 groups');
  const mapped: Record<string, string[]> = {};
  const seen = new Set<string>();
  for (const [group, roles] of entries) {
    if (group.trim() === '' || group.length > 255) throw invalidField('groupRoles', 'has a group name that is empty or longer than 255 characters');
    if (seen.has(group.toLowerCase())) throw invalidField('groupRoles', `names ${JSON.stringify(group.slice(0, 60))} twice (names compare regardless of case)`);
    seen.add(group.toLowerCase());
    if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string')) throw invalidField('groupRoles', `maps ${JSON.stringify(group.slice(0, 60))} to something that is not a list of roles`);
    mapped[group] = await knownRolesOf(deps, command.app, roles as string[], 'groupRoles');
  }
  return deps.work.run(async (uow) => {
    const organization = await ownersOrganization(deps, command, uow.tx);
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    if (JSON.stringify(await deps.db.scim.findGroupRoles(organization.id, uow.tx)) === JSON.stringify(mapped)) return { organizationId: organization.organizationId, groupRoles: mapped };
    await deps.db.scim.setGroupRoles(organization.id, command.app.id, mapped, now, uow.tx);
    uow.record(event('scim.configured', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, groups: Object.keys(mapped) }));
    // every provisioned member's roles follow the new mapping at once
    const call = { app: command.app, organization, acting: command.acting, base: '' };
    for (let after = 0; ;) {
      const batch = await deps.db.scim.listUsers(organization.id, after, 500, uow.tx);
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      await applyGroupRoles(deps, call, uow, batch);
    }
    return { organizationId: organization.organizationId, groupRoles: mapped };
  });
}

/** How often a token's last use is written (a directory calls many times a minute). */
const TOUCH_EVERY_MS = 60_000;
const touched = new Map<number, number>();

/**
 * The organization a bearer token reaches in the application, with the token as the actor, or a
 * 401: a token that is not one, revoked, or another application's.
 */
export async function scimCaller(deps: Pick<Services, 'db' | 'clock'>, command: { app: Application; token: string | undefined }): Promise<{ organization: StoredOrganization; tokenId: string }> {
  const refused = () => new ScimError(401, 'the request needs the organization\'s SCIM token in Authorization: Bearer (made with /organizations/scim/tokens/create; a revoked token is refused)');
  if (command.token === undefined || !TOKEN.test(command.token)) throw refused();
  const found = await deps.db.scim.findToken(sha256Hex(command.token));
  if (!found || found.token.applicationId !== command.app.id) throw refused();
  const organization = await deps.db.organizations.findByKey(found.token.organizationKey);
  if (!organization) throw refused();
  const now = deps.clock.now().getTime();
  if ((touched.get(found.token.id) ?? 0) + TOUCH_EVERY_MS < now) {
    touched.set(found.token.id, now);
    if (touched.size > 10_000) touched.clear();
    await deps.db.scim.touchTokenAlone(found.token.id, deps.clock.now());
  }
  return { organization, tokenId: found.token.publicId };
}
