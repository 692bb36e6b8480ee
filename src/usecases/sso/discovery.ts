import { domainOf } from '../../domain/organizations';
import { Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/**
 * Home-realm discovery and required sign-in through an organization (docs/organizations.md#home-realm-discovery):
 * an address at a domain an organization verified goes to that organization's connection; a
 * member of an organization that requires its connection signs in through it only.
 */

/** The connection an address's domain signs in through (the first of the organizations that verified it), if any. */
export async function connectionForAddress(deps: Pick<Services, 'db'>, app: Application, email: string): Promise<string | undefined> {
  if (!/^[^\s@]{1,64}@[^\s@]{1,253}$/.test(email.trim())) return undefined;
  const found = await deps.db.connections.findByDomain(app.id, domainOf(email.trim()));
  return found[0]?.connection.publicId;
}

/** The first connection of an organization (by its public id), if it has one. */
export async function connectionForOrganization(deps: Pick<Services, 'db'>, app: Application, organizationId: string): Promise<string | undefined> {
  const organization = /^org_[0-9a-f]{24}$/.test(organizationId) ? await deps.db.organizations.find(app.id, organizationId) : undefined;
  if (!organization) return undefined;
  return (await deps.db.connections.listOf(organization.id))[0]?.publicId;
}

/** How long a pod trusts what it read of whether an application has required connections. */
const REQUIRED_TTL_MS = 5_000;
const requiredSeen = new Map<number, { any: boolean; until: number }>();

/** Forgets what this pod read of an application's required connections (after a change it made: the other pods see it within REQUIRED_TTL_MS). */
export const forgetRequiredConnections = (applicationId: number) => void requiredSeen.delete(applicationId);

/**
 * Refuses a sign-in other than through a connection of a member of an organization that requires
 * its connection, naming it. An application none of whose organizations requires one costs a
 * sign-in a lookup in memory (read at most every REQUIRED_TTL_MS per pod), not a query.
 */
export async function refuseWhereConnectionRequired(deps: Pick<Services, 'db'>, app: Application, entityId: number): Promise<void> {
  const now = Date.now();
  let seen = requiredSeen.get(app.id);
  if (!seen || seen.until <= now) {
    seen = { any: await deps.db.connections.anyRequired(app.id), until: now + REQUIRED_TTL_MS };
    if (requiredSeen.size > 10_000) requiredSeen.clear();
    requiredSeen.set(app.id, seen);
  }
  if (!seen.any) return;
  const required = await deps.db.connections.findRequired(app.id, entityId);
  if (required.length === 0) return;
  const names = required.map((r) => r.connection.name).join(', ');
  throw new Refusal('wrong_credentials', `this account's organization requires signing in through its identity provider (${names}): sign in with the organization's address, which goes there`, {
    message: `Your organization requires signing in through ${names}: type your work address and you will be taken there.`,
  });
}
