import { domainOf, joinableProblem } from '../../domain/organizations';
import { Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/**
 * Home-realm discovery and required sign-in through an organization (docs/organizations.md#home-realm-discovery):
 * an address at a domain an organization verified goes to that organization's connection; a
 * member of an organization that requires its connection signs in through it only.
 */

/**
 * The connection an address's domain signs in through: the first connection of the one organization
 * whose claim of the domain the application verified (an owner's own verification never sends
 * anyone to a connection), never a mail provider's domain; none when two organizations have it.
 */
export async function connectionForAddress(deps: Pick<Services, 'db'>, app: Application, email: string): Promise<string | undefined> {
  if (!/^[^\s@]{1,64}@[^\s@]{1,253}$/.test(email.trim())) return undefined;
  const domain = domainOf(email.trim());
  // a mail provider anyone has an address at is no organization's
  if (joinableProblem(domain) !== undefined) return undefined;
  const found = await deps.db.connections.findByDomain(app.id, domain);
  // two organizations the application verified the domain for: no guess between them (the app names one with `organization`)
  if (new Set(found.map((f) => f.organizationId)).size !== 1) return undefined;
  return found[0].connection.publicId;
}

/** The first connection of an organization (by its public id), if it has one. */
export async function connectionForOrganization(deps: Pick<Services, 'db'>, app: Application, organizationId: string): Promise<string | undefined> {
  const organization = /^org_[0-9a-f]{24}$/.test(organizationId) ? await deps.db.organizations.find(app.id, organizationId) : undefined;
  if (!organization) return undefined;
  return (await deps.db.connections.listOf(organization.id))[0]?.publicId;
}

/** How long a pod trusts what it read of an application's connections. */
const SUMMARY_TTL_MS = 5_000;
const summaries = new Map<number, { connections: boolean; required: boolean; until: number }>();

/** Forgets what this pod read of an application's connections (after a change it made: the other pods see it within SUMMARY_TTL_MS). */
export const forgetConnections = (applicationId: number) => void summaries.delete(applicationId);

/** Whether the application's organizations have connections, and whether one requires its: read at most every SUMMARY_TTL_MS per pod. */
async function summaryOf(deps: Pick<Services, 'db'>, app: Application) {
  const now = Date.now();
  let seen = summaries.get(app.id);
  if (!seen || seen.until <= now) {
    seen = { ...await deps.db.connections.summary(app.id), until: now + SUMMARY_TTL_MS };
    if (summaries.size > 10_000) summaries.clear();
    summaries.set(app.id, seen);
  }
  return seen;
}

/** Whether the hosted sign-in offers "Sign in with your organization" (some organization of the application has a connection). */
export const offersConnections = async (deps: Pick<Services, 'db'>, app: Application): Promise<boolean> => (await summaryOf(deps, app)).connections;

/**
 * Refuses a sign-in of a member of an organization that requires its connection other than through
 * that connection (`through`: the connection a sign-in came through), naming it. An application none of whose organizations requires one costs a
 * sign-in a lookup in memory (read at most every SUMMARY_TTL_MS per pod), not a query.
 */
export async function refuseWhereConnectionRequired(deps: Pick<Services, 'db'>, app: Application, entityId: number, through?: string): Promise<void> {
  if (!(await summaryOf(deps, app)).required) return;
  const required = await deps.db.connections.findRequired(app.id, entityId);
  // (another organization's connection is not the one this member's organization requires)
  if (required.length === 0 || (through !== undefined && required.some((r) => r.connection.publicId === through))) return;
  const names = required.map((r) => r.connection.name).join(', ');
  throw new Refusal('wrong_credentials', `this account's organization requires signing in through its identity provider (${names}): use "Sign in with your organization" with the organization's address`, {
    message: `Your organization requires signing in through ${names}: choose "Sign in with your organization" and type your work address.`,
  });
}
