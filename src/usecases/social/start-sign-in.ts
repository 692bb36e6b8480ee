import { BUDGET_KEYS } from '../../domain/budget-keys';
import { sha256Hex } from '../../domain/secrets';
import type { ProviderService } from '../../domain/social/providers';
import type { Services } from '../services';

/** How long a sign-in in progress waits for the provider's callback. */
export const SOCIAL_STATE_SECONDS = 600;

/**
 * A sign-in in progress, stored (hashed by its `state`) from the redirect to the provider until
 * its callback: the provider, the callback URL, the relying party's checks (sealed, bound to the
 * state) and what the caller needs to resume (`resume`: where the token goes; opaque here).
 */
export interface PendingSignIn { provider: string; redirectUri: string; sealed: string; resume: Record<string, unknown> }

/**
 * GET /social/:provider/start: a sign-in with one of the application's providers begins (the
 * adapter has found the provider, with its secret). Starts are limited per client address (each
 * stores a sign-in in progress); the checks of the OpenID Connect or OAuth exchange (state, nonce,
 * PKCE verifier) are sealed in the stored row. Answers where to send the browser and the state to
 * bind to it.
 */
export async function startSocialSignIn(
  deps: Pick<Services, 'relyingParty' | 'rateLimiter' | 'loginLimits' | 'db' | 'work' | 'box' | 'clock'>,
  command: {
    app: { id: number };
    found: NonNullable<Awaited<ReturnType<ProviderService['withSecret']>>>;
    clientAddress: string; callbackUrl: string; resume: Record<string, unknown>;
  },
): Promise<{ url: string; state: string }> {
  const { app, found } = command;
  const provider = found.provider.name;
  await deps.rateLimiter.take([[BUDGET_KEYS.socialStart(app.id, command.clientAddress), deps.loginLimits.address]]);
  const { url, checks } = await deps.relyingParty.start(found.provider, found.secret, command.callbackUrl);
  const pending: PendingSignIn = {
    provider, redirectUri: command.callbackUrl, sealed: deps.box.seal(JSON.stringify(checks), `social:${checks.state}`), resume: command.resume,
  };
  const now = deps.clock.now();
  await deps.work.run(({ tx }) => deps.db.credentials.insert([{
    applicationId: app.id, kind: 'social_state', valueHash: sha256Hex(checks.state), entityId: null, clientId: null, forClientId: null,
    redirectUri: null, extra: { ...pending }, family: null, expiresAt: new Date(now.getTime() + SOCIAL_STATE_SECONDS * 1000),
  }], now, tx));
  return { url, state: checks.state };
}
