import type { Work } from '../ports';
import type { Storage, Tx } from '../storage';
import type { Application } from '../storage/applications';
import type { StoredCredential } from '../storage/credentials';
import type { Client, Clock } from '../clients';
import { randomToken, sha256Hex } from '../secrets';
import { wholeSeconds } from '../tokens';
import { parseProfile, type SocialProfile } from './profile';

/** How long a social token's profile is kept for register_native and merges to follow auth_native. */
export const SOCIAL_TOKEN_SECONDS = 600;

/** What auth_native found for a token, so register_native and a merge can follow. */
export type Outcome =
  | { presented: 'record_not_found' }
  | { presented: 'email_address_in_use'; conflictEntityId: number };

export interface Redeemed {
  profile: SocialProfile;
  outcome?: Outcome;
}

interface Extra { profile: SocialProfile; outcome?: Outcome }

/** The external social login application's answer could not be used. */
export class ExternalSocialError extends Error {}

/**
 * Stored hashes are scoped to the application: a token an external application (which may be
 * another application of this very database) issued is kept under its own row here.
 */
const hashOf = (app: Application, value: string) => sha256Hex(`${app.id}:${value}`);

const lifetime = (app: Application) => wholeSeconds(app.settings.social_token_lifetime, SOCIAL_TOKEN_SECONDS);

/**
 * Social login tokens, one port for both sources (`SocialTokens.redeem(token) → profile`):
 * tokens of the built-in social login application are stored here when its callback issues them;
 * a login client with `social_login_url` and `social_login_api_key` settings uses an external one,
 * whose `auth_info` answer is fetched once and kept here under the same token. Either way a token
 * is stored as its SHA-256, lives `social_token_lifetime` seconds (default 600), may be presented
 * again (auth_native, then register_native or a merge), and is spent for good by a sign-in,
 * registration, merge or link: one conditional UPDATE, so single use holds under concurrency.
 */
export function createSocialTokens(deps: { db: Storage; clock: Clock; work: Work; timeoutMs?: number }) {
  const { db, clock, work } = deps;
  const timeout = deps.timeoutMs ?? 5_000;

  async function store(app: Application, value: string, profile: SocialProfile): Promise<void> {
    const now = clock.now();
    await work.run(({ tx }) => db.credentials.insert([{
      applicationId: app.id, kind: 'social_token', valueHash: hashOf(app, value), entityId: null, clientId: null, forClientId: null,
      redirectUri: null, extra: { profile } satisfies Extra, family: null, expiresAt: new Date(now.getTime() + lifetime(app) * 1000),
    }], now, tx));
  }

  const live = (app: Application, value: string): Promise<StoredCredential | undefined> =>
    db.credentials.findActive(app.id, 'social_token', hashOf(app, value), clock.now());

  /** The external application's `auth_info` for this token (POST apiKey, token). */
  async function fetchExternal(url: string, apiKey: string, token: string): Promise<SocialProfile | undefined> {
    let res: Response;
    try {
      res = await fetch(`${url.replace(/\/+$/, '')}/api/v2/auth_info`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ apiKey, token }), signal: AbortSignal.timeout(timeout),
      });
    } catch (e) {
      throw new ExternalSocialError(`the social login application at ${url} could not be reached (${(e as Error).message})`);
    }
    const body = (await res.json().catch(() => undefined)) as { stat?: string; profile?: unknown; err?: { code?: number; msg?: string } } | undefined;
    if (body?.stat === 'ok') {
      const profile = parseProfile(body.profile);
      if (!profile) throw new ExternalSocialError(`the social login application at ${url} answered a profile without identifier or providerName`);
      return profile;
    }
    if (body?.stat === 'fail' && (body.err?.code === 1 || body.err?.code === 2)) return undefined; // unknown or expired token
    throw new ExternalSocialError(`the social login application at ${url} refused the call: ${body?.err?.msg ?? `HTTP ${res.status}`}`);
  }

  return {
    /** A new 40-character token for `profile` (the built-in application's callback). */
    async issue(app: Application, profile: SocialProfile): Promise<string> {
      const value = randomToken(20);
      await store(app, value, profile);
      return value;
    },

    /** The profile behind a live token, from this application's store or the client's external application. */
    async redeem(app: Application, client: Client | undefined, value: string): Promise<Redeemed | undefined> {
      if (!/^[A-Za-z0-9_-]{20,128}$/.test(value)) return undefined;
      const found = await live(app, value);
      if (found) return found.extra as unknown as Redeemed;
      const url = client?.settings.social_login_url;
      const apiKey = client?.settings.social_login_api_key;
      if (!url || !apiKey) return undefined;
      const profile = await fetchExternal(url, apiKey, value);
      if (!profile) return undefined;
      // kept here for what follows auth_native; a parallel first redemption may have stored it already
      await store(app, value, profile).catch(async (e) => {
        if (!(await live(app, value))) throw e;
      });
      return { profile };
    },

    /** Records what auth_native found, for register_native and a merge to check. */
    async mark(app: Application, value: string, profile: SocialProfile, outcome: Outcome): Promise<void> {
      await work.run(({ tx }) => db.credentials.setExtra(app.id, 'social_token', hashOf(app, value), { profile, outcome } satisfies Extra, clock.now(), tx));
    },

    /** Spends the token for good; false when another request spent it first (or it expired). */
    consume(app: Application, value: string, tx: Tx): Promise<boolean> {
      return db.credentials.consume(app.id, 'social_token', hashOf(app, value), clock.now(), tx);
    },
  };
}
export type SocialTokens = ReturnType<typeof createSocialTokens>;
