import type { Client as OidcClient, Issuer } from 'openid-client';
import type { StoredProvider } from '../storage/social';
import { fromGithub, fromOidcClaims, type SocialProfile } from './profile';

/**
 * The provider could not be reached (`unreachable`), or its answer did not prove the sign-in
 * (`failed`). The message is the detail for the log; people see only which of the two, in words.
 */
export class ProviderError extends Error {
  constructor(readonly kind: 'unreachable' | 'failed', readonly provider: string, detail: string) {
    super(detail);
  }
}

/** What a sign-in in progress must remember between the redirect and the callback. */
export interface Checks { state: string; nonce: string; codeVerifier: string }

const DISCOVERY_TTL_MS = 10 * 60_000;

/**
 * The relying-party side, on `openid-client`: authorization code with PKCE (S256), `state` and
 * (OpenID Connect) `nonce` checked, the ID token validated (issuer, audience, expiry, signature
 * against the provider's JWKS). Discovery documents are cached for 10 minutes. Every call to a
 * provider is bounded by `timeoutMs`, so a provider that is down fails the page, never hangs it.
 */
export function createRelyingParty(options: { timeoutMs?: number } = {}) {
  const timeout = options.timeoutMs ?? 5_000;
  // openid-client loads on the first social sign-in, not with every process (docs/decisions.md)
  let loaded: typeof import('openid-client') | undefined;
  const lib = () => {
    if (!loaded) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      loaded = require('openid-client') as typeof import('openid-client');
      loaded.custom.setHttpOptionsDefaults({ timeout });
    }
    return loaded;
  };
  const discovered = new Map<string, { issuer: Issuer; until: number }>();

  async function issuerOf(p: StoredProvider): Promise<Issuer> {
    if (p.kind === 'github') {
      return new (lib().Issuer)({ issuer: p.issuer, authorization_endpoint: `${p.issuer}/login/oauth/authorize`, token_endpoint: `${p.issuer}/login/oauth/access_token` });
    }
    const hit = discovered.get(p.issuer);
    if (hit && hit.until > Date.now()) return hit.issuer;
    try {
      const issuer = await lib().Issuer.discover(p.issuer);
      discovered.set(p.issuer, { issuer, until: Date.now() + DISCOVERY_TTL_MS });
      return issuer;
    } catch (e) {
      throw new ProviderError('unreachable', p.name, `the identity provider ${p.name} could not be reached at ${p.issuer} (${(e as Error).message})`);
    }
  }

  async function clientOf(p: StoredProvider, secret: string, redirectUri: string): Promise<OidcClient> {
    const issuer = await issuerOf(p);
    return new issuer.Client({ client_id: p.clientId, client_secret: secret, redirect_uris: [redirectUri], response_types: ['code'] });
  }

  /** GitHub's REST API: `https://api.github.com`, or `/api/v3` on GitHub Enterprise Server. */
  async function github(p: StoredProvider, accessToken: string): Promise<SocialProfile> {
    const api = p.issuer === 'https://github.com' ? 'https://api.github.com' : `${p.issuer}/api/v3`;
    const get = async (path: string) => {
      const res = await fetch(`${api}${path}`, {
        headers: { Authorization: `Bearer ${accessToken}`, Accept: 'application/vnd.github+json', 'User-Agent': 'Gatehouse' },
        signal: AbortSignal.timeout(timeout),
      });
      if (!res.ok) throw new ProviderError('failed', p.name, `GitHub answered ${res.status} to ${path}`);
      return res.json() as Promise<unknown>;
    };
    const [user, emails] = await Promise.all([get('/user'), get('/user/emails').catch(() => [])]);
    return fromGithub(p.name, p.issuer, user as Record<string, unknown>, emails);
  }

  /** `finish`, with the claims the profile was made from (an OpenID provider's: the ID token's, then userinfo's for the same subject). */
  async function finishWithClaims(p: StoredProvider, secret: string, redirectUri: string, query: Record<string, string>, checks: Checks): Promise<{ profile: SocialProfile; claims: Record<string, unknown> }> {
    const client = await clientOf(p, secret, redirectUri);
    try {
      if (p.kind === 'github') {
        const tokens = await client.oauthCallback(redirectUri, query, { state: checks.state, code_verifier: checks.codeVerifier });
        if (!tokens.access_token) throw new ProviderError('failed', p.name, 'GitHub sent no access token');
        return { profile: await github(p, tokens.access_token), claims: {} };
      }
      const tokens = await client.callback(redirectUri, query, { state: checks.state, nonce: checks.nonce, code_verifier: checks.codeVerifier });
      const claims: Record<string, unknown> = { ...tokens.claims() };
      if (tokens.access_token && client.issuer.metadata.userinfo_endpoint) {
        // the ID token may carry only `sub`: the rest comes from userinfo, for the same subject
        const info = await client.userinfo(tokens).catch(() => undefined);
        if (info && info.sub === claims.sub) Object.assign(claims, { ...info, ...claims, email_verified: claims.email_verified ?? info.email_verified });
      }
      return { profile: fromOidcClaims(p.name, String(client.issuer.metadata.issuer), claims), claims };
    } catch (e) {
      if (e instanceof ProviderError) throw e;
      throw new ProviderError('failed', p.name, `the sign-in with ${p.name} could not be completed: ${(e as Error).message}`);
    }
  }

  return {
    /** Where to send the browser, and the checks to keep until it comes back. */
    async start(p: StoredProvider, secret: string, redirectUri: string): Promise<{ url: string; checks: Checks }> {
      const client = await clientOf(p, secret, redirectUri);
      const { generators } = lib();
      const checks = { state: generators.state(), nonce: generators.nonce(), codeVerifier: generators.codeVerifier() };
      const url = client.authorizationUrl({
        scope: p.scopes.join(' '), redirect_uri: redirectUri, state: checks.state,
        code_challenge: generators.codeChallenge(checks.codeVerifier), code_challenge_method: 'S256',
        ...(p.kind === 'oidc' && { nonce: checks.nonce }),
      });
      return { url, checks };
    },

    /** Exchanges the code the provider sent back, validates what it proves, and answers the profile. */
    async finish(p: StoredProvider, secret: string, redirectUri: string, query: Record<string, string>, checks: Checks): Promise<SocialProfile> {
      return (await finishWithClaims(p, secret, redirectUri, query, checks)).profile;
    },

    finishWithClaims,
  };
}
export type RelyingParty = ReturnType<typeof createRelyingParty>;
