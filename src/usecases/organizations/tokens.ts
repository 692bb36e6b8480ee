import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/**
 * What the OpenID provider says of an account's organizations (docs/organizations.md#tokens): its
 * organizations in the ID token and userinfo (scope `organizations`), and its roles and
 * permissions in one organization, in that organization's access token. Read afresh for every
 * token: a member removed, or an organization deleted, gets none at the next refresh.
 */

/** The claims of an organization's access token. */
export interface OrganizationTokenClaims { org_id: string; org_roles: string[]; org_permissions: string[] }

/** The account's (by its uuid) roles and permissions in the organization, or undefined when it is not a member (or there is no such organization). */
export async function organizationTokenClaims(
  deps: Pick<Services, 'db'>, command: { app: Application; accountId: string; organizationId: string },
): Promise<OrganizationTokenClaims | undefined> {
  const roles = await deps.db.organizations.findRolesOf(command.app.id, command.accountId, command.organizationId);
  if (!roles) return undefined;
  return { org_id: command.organizationId, org_roles: roles.map((r) => r.role), org_permissions: [...new Set(roles.flatMap((r) => r.permissions))].sort() };
}

/** Whether the application has this organization (an authorization request naming one, before anyone signed in). */
export async function organizationExists(deps: Pick<Services, 'db'>, command: { app: Application; organizationId: string }): Promise<boolean> {
  return (await deps.db.organizations.find(command.app.id, command.organizationId)) !== undefined;
}

/**
 * The claims of scope `organizations`, in the ID token and at userinfo: the account's organization
 * ids, and its roles in each as `id:role`.
 */
export async function organizationsClaims(
  deps: Pick<Services, 'db'>, command: { app: Application; entityId: number; limit: number },
): Promise<{ organizations: string[]; organization_roles: string[] }> {
  const memberships = await deps.db.organizations.listOrganizationRolesOf(command.app.id, command.entityId, command.limit);
  return {
    organizations: memberships.map((m) => m.organizationId),
    organization_roles: memberships.flatMap((m) => m.roles.map((r) => `${m.organizationId}:${r}`)),
  };
}
