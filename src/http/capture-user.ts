import type { AnyTx } from '../db';
import type { EntityRecord } from '../db/repositories/entities';
import type { StoredProfile } from '../db/repositories/social';
import { formatTimestamp } from '../domain/timestamps';
import { renderUser } from '../domain/users';
import type { RequestContext } from './context';
import { loginTokens, type FlowRequest } from './flow-request';

/** One linked identity as `capture_user.profiles` shows it. */
export function renderProfile(p: StoredProfile): Record<string, unknown> {
  let domain: string | null = null;
  try {
    domain = new URL(p.identifier).hostname;
  } catch {
    // an identifier from an external application need not be a URL
  }
  return { id: p.id, identifier: p.identifier, domain, provider: p.provider, profile: p.data, created: formatTimestamp(p.created) };
}

/** The record as the API shows it, with linked identities already loaded. */
export const renderWithProfiles = (record: EntityRecord, profiles: StoredProfile[]) => renderUser(record, profiles.map(renderProfile));

/** The record as the API shows it, with its linked identities. */
export async function captureUser(ctx: RequestContext, record: EntityRecord): Promise<Record<string, unknown>> {
  return renderWithProfiles(record, await ctx.services.db.social.profiles.forEntity(ctx.app.id, record.id));
}

/**
 * What every successful sign-in answers (password or social): tokens per response_type, then
 * lastLogin written (and a rehashed password, when one is given), then capture_user. No
 * transaction: the tokens mean nothing until this answer carries them.
 */
export async function signedIn(
  ctx: RequestContext,
  request: FlowRequest,
  record: EntityRecord,
  options: { passwordHash?: string; tx?: AnyTx } = {},
): Promise<Record<string, unknown>> {
  const now = ctx.services.clock.now();
  const lastLogin = now.toISOString();
  const tokens = await loginTokens(ctx, request, record.id, options.tx);
  await ctx.services.db.entities.update(record, { passwordHash: options.passwordHash, attributes: { lastLogin } }, now, options.tx);
  const updated = { ...record, attributes: { ...record.attributes, lastLogin }, lastUpdated: now };
  return { capture_user: await captureUser(ctx, updated), ...tokens };
}
