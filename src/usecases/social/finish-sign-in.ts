import { sha256Hex } from '../../domain/secrets';
import type { Checks } from '../../domain/social/relying-party';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';
import type { PendingSignIn } from './start-sign-in';

/** How a provider's callback ended: a one-time token for the profile, or why not (with what the caller stored to resume, when known). */
export type SocialCallback =
  | { kind: 'token'; token: string; provider: string; resume: Record<string, unknown> }
  | { kind: 'spent' }
  | { kind: 'otherProvider' }
  | { kind: 'denied'; provider: string; error: string; description?: string; resume: Record<string, unknown> }
  | { kind: 'providerRemoved'; provider: string; resume: Record<string, unknown> };

/**
 * GET /social/:provider/callback: the sign-in in progress is spent once (a replayed callback finds
 * nothing), the provider's answer is checked against the sealed checks, and the profile gets a
 * one-time 40-character token. A provider that cannot be reached or answers wrongly throws
 * ProviderError.
 */
export async function finishSocialSignIn(
  deps: Pick<Services, 'providers' | 'relyingParty' | 'socialTokens' | 'db' | 'work' | 'box' | 'clock'>,
  command: { app: Application; provider: string; state: string; query: Record<string, string> },
): Promise<SocialCallback> {
  const { app, state } = command;
  const hash = sha256Hex(state);
  const row = await deps.work.run(async ({ tx }) => {
    const found = await deps.db.credentials.findActive(app.id, 'social_state', hash, deps.clock.now());
    return found && (await deps.db.credentials.consume(app.id, 'social_state', hash, deps.clock.now(), tx)) ? found : undefined;
  });
  if (!row) return { kind: 'spent' };
  // a row an older release stored keeps what resumes it beside the rest
  const { resume: given, ...stored } = row.extra as unknown as PendingSignIn;
  const { provider: _p, redirectUri: _r, sealed: _s, ...older } = stored;
  const pending = { ...stored, resume: given ?? older };
  if (pending.provider !== command.provider) return { kind: 'otherProvider' };
  const { resume } = pending;
  const error = command.query.error;
  if (error) return { kind: 'denied', provider: pending.provider, error, description: command.query.error_description, resume };
  const found = await deps.providers.withSecret(app.id, pending.provider);
  if (!found) return { kind: 'providerRemoved', provider: pending.provider, resume };
  const checks = JSON.parse(deps.box.open(pending.sealed, `social:${state}`)) as Checks;
  const profile = await deps.relyingParty.finish(found.provider, found.secret, pending.redirectUri, command.query, checks);
  return { kind: 'token', token: await deps.socialTokens.issue(app, profile), provider: pending.provider, resume };
}
