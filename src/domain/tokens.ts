import type { Storage, Tx } from './storage';
import type { Application } from './storage/applications';
import { type CredentialKind, type NewCredential, type StoredCredential } from './storage/credentials';
import { invalidField } from './refusal';
import { ACCESS_TOKEN_SECONDS_RANGE } from './settings';
import type { Client, Clock } from './clients';
import { randomToken, sha256Hex, type SecretBox } from './secrets';
import { sessionFacts, type SessionFacts } from './session';

/** docs/api.md#codes-and-tokens. Access tokens always live one hour; the others default as below. */
export const ACCESS_TOKEN_SECONDS = 3600;
/** An authorization code lives this long unless the caller asks otherwise (getAuthorizationCode's `lifetime`). */
export const AUTHORIZATION_CODE_SECONDS = 30;
const DEFAULT_SECONDS: Record<Exclude<CredentialKind, 'access_token' | 'social_token' | 'social_state' | 'refresh_secret' | 'email_change_undo' | 'email_reservation' | 'recovery_code' | 'mfa_token' | 'passkey_challenge' | 'enroll_token' | 'browser_session' | 'console_session' | 'oidc_code' | 'oidc_access_token' | 'oidc_refresh_token' | 'oidc_client_token' | 'email_code' | 'pow_challenge' | 'oidc_device_code' | 'oidc_user_code'>, number> = {
  authorization_code: AUTHORIZATION_CODE_SECONDS,
  creation_token: 3600,
  verification_code: 604_800,
  refresh_token: 90 * 86_400,
};
/** Largest `lifetime` a caller may ask for, unless the application's `max_lifetime.<kind>` setting says otherwise. */
const MAX_SECONDS: Record<'authorization_code' | 'creation_token' | 'verification_code', number> = {
  authorization_code: 3600,
  creation_token: 86_400,
  verification_code: 30 * 86_400,
};

export type LimitedKind = keyof typeof MAX_SECONDS;

/**
 * The value whose hash keys the refresh-secret session of an access token (every credential hash
 * is unique, so it cannot be the token's own hash).
 */
export const refreshSessionKey = (accessToken: string) => `refresh_secret\n${accessToken}`;

/** A setting holding a positive whole number of seconds, or `fallback` when it holds none. */
export function wholeSeconds(setting: string | undefined, fallback: number): number {
  return setting && /^[1-9]\d{0,8}$/.test(setting) ? Number(setting) : fallback;
}

/**
 * How long an application's access tokens live: its setting `access_token_lifetime` (whole
 * seconds, within ACCESS_TOKEN_SECONDS_RANGE), else an hour, as the API has them by default.
 */
export function accessSeconds(app: Application): number {
  const seconds = wholeSeconds(app.settings['access_token_lifetime'], ACCESS_TOKEN_SECONDS);
  return seconds >= ACCESS_TOKEN_SECONDS_RANGE.min && seconds <= ACCESS_TOKEN_SECONDS_RANGE.max ? seconds : ACCESS_TOKEN_SECONDS;
}

/** Parses `lifetime` (whole seconds, > 0) against the application's maximum for the kind. */
export function parseLifetime(app: Application, kind: LimitedKind, raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_SECONDS[kind];
  const max = wholeSeconds(app.settings[`max_lifetime.${kind}`], MAX_SECONDS[kind]);
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) {
    throw invalidField('lifetime', 'must be a positive whole number of seconds, such as 300');
  }
  if (Number(raw) > max) {
    throw invalidField('lifetime', `must be at most ${max} seconds for this application (application setting max_lifetime.${kind})`);
  }
  return Number(raw);
}

export interface Issue {
  kind: CredentialKind;
  app: Application;
  entityId: number | null;
  client: Client;
  forClientId?: number | null;
  redirectUri?: string | null;
  extra?: Record<string, unknown> | null;
  family?: string | null;
  seconds: number;
}

/**
 * What an access token proves about how its holder got it, kept in its row: a password typed at
 * `authenticated_at` (sign-in, registration, or a code from one), or a password reset link
 * followed (`password_reset`). Setting a password without the current one needs one of them.
 */
export type Proof = { authenticated_at?: string; password_reset?: true; session?: SessionFacts };

/** How long after a sign-in its token may set a password without the current one. */
export const FRESH_SIGN_IN_SECONDS = 300;

/** The proof a code hands on to the tokens it is exchanged for. */
export function proofOf(code: StoredCredential): Proof | null {
  const { authenticated_at: at, password_reset: reset } = code.extra ?? {};
  const session = sessionFacts(code);
  const proof: Proof = {
    ...(typeof at === 'string' && { authenticated_at: at }),
    ...(reset === true && { password_reset: true as const }),
    ...(session && { session }),
  };
  return Object.keys(proof).length > 0 ? proof : null;
}

/** Whether the token may set a password without the current one: it came from a reset link, or from a sign-in minutes ago. */
export function mayResetPassword(token: StoredCredential, now: Date): boolean {
  const { password_reset: reset, authenticated_at: at } = token.extra ?? {};
  if (reset === true) return true;
  const signedIn = typeof at === 'string' ? Date.parse(at) : NaN;
  return Number.isFinite(signedIn) && now.getTime() - signedIn <= FRESH_SIGN_IN_SECONDS * 1000 && signedIn <= now.getTime() + 1000;
}

/** What a code exchange or a rotation gives: a new access token, its lifetime, its refresh token (and an exchanged code's transaction state). */
export interface TokenPair {
  accessToken: string;
  expiresIn: number;
  refreshToken: string;
  transactionState?: unknown;
}

/**
 * Issuing credentials (docs/api.md#codes-and-tokens): random values of 160 bits, stored only as
 * SHA-256 hashes, with their rows and lifetimes (every kind but the social ones). Spending them is
 * the use cases' (src/usecases/tokens): one conditional UPDATE each, so single use holds under
 * concurrency, rotated in families so a replayed one revokes its whole family.
 */
export function createIssuer({ db, clock, box }: { db: Storage; clock: Clock; box: SecretBox }) {
  const now = () => clock.now();

  /**
   * The rows of new credentials and their values in order (shown once, never stored). Each value
   * is a new random one unless it came from elsewhere (a social merge_token kept for linking).
   */
  function credentialRows(list: { issue: Issue; value?: string }[], at: Date): { values: string[]; rows: NewCredential[] } {
    const values = list.map((e) => e.value ?? randomToken(20));
    const rows = list.map(({ issue: i }, n) => ({
      applicationId: i.app.id,
      kind: i.kind,
      valueHash: sha256Hex(values[n]),
      entityId: i.entityId,
      clientId: i.client.id,
      forClientId: i.forClientId ?? null,
      redirectUri: i.redirectUri ?? null,
      extra: i.extra ?? null,
      family: i.family ?? null,
      expiresAt: new Date(at.getTime() + i.seconds * 1000),
    }));
    return { values, rows };
  }

  /** Stores credentials in one INSERT and returns their values in order. */
  async function issueAll(list: { issue: Issue; value?: string }[], tx: Tx): Promise<string[]> {
    const at = now();
    const { values, rows } = credentialRows(list, at);
    await db.credentials.insert(rows, at, tx);
    return values;
  }

  /** Stores one credential and returns its value. */
  const issue = async (i: Issue, tx: Tx): Promise<string> => (await issueAll([{ issue: i }], tx))[0];

  /** What a standalone access token for one record is (getAccessToken, sign-in, registration). */
  const accessToken = (app: Application, client: Client, entityId: number, forClientId: number | null, extra: Proof | null = null): Issue =>
    ({ kind: 'access_token', app, entityId, client, forClientId, family: randomToken(16), seconds: accessSeconds(app), extra });

  const refreshSeconds = (app: Application) => wholeSeconds(app.settings['refresh_token_lifetime'], DEFAULT_SECONDS.refresh_token);

  /** Values and rows of a new access + refresh token pair. */
  function newPair(app: Application) {
    const access = randomToken(20);
    const refresh = randomToken(20);
    const at = now().getTime();
    const accessFor = accessSeconds(app);
    return {
      pair: { accessToken: access, expiresIn: accessFor, refreshToken: refresh },
      rows: {
        access: { valueHash: sha256Hex(access), expiresAt: new Date(at + accessFor * 1000) },
        refresh: { valueHash: sha256Hex(refresh), expiresAt: new Date(at + refreshSeconds(app) * 1000) },
      },
    };
  }

  /**
   * A new access + refresh token pair in `family`: `proof` goes with the access token; the refresh
   * token carries only the session's facts, which its rotations pass on (never a proof of a fresh
   * sign-in).
   */
  async function issuePair(app: Application, client: Client, entityId: number | null, family: string, tx: Tx, proof: Proof | null = null): Promise<TokenPair> {
    const { pair, rows } = newPair(app);
    const base = { applicationId: app.id, entityId, clientId: client.id, forClientId: null, redirectUri: null, family };
    await db.credentials.insert([
      { ...base, kind: 'access_token', ...rows.access, extra: proof },
      { ...base, kind: 'refresh_token', ...rows.refresh, extra: proof?.session ? { session: proof.session } : null },
    ], now(), tx);
    return pair;
  }

  /** What the sealed refresh secret of the session with row hash `hash` is bound to. */
  const secretBinding = (hash: string) => `refresh_secret:${hash}`;

  /**
   * The session row of a mobile SDK's refresh secret for `accessToken` (issued with it): keyed by
   * the hash of refreshSessionKey(token), in the token's family, living as long as a refresh token.
   */
  const refreshSecretIssue = (
    app: Application, client: Client, entityId: number, family: string, accessToken: string, secret: string, session?: SessionFacts,
  ): Issue => ({
    kind: 'refresh_secret', app, entityId, client, family, seconds: refreshSeconds(app),
    extra: { secret: box.seal(secret, secretBinding(sha256Hex(refreshSessionKey(accessToken)))), ...(session && { session }) },
  });

  return {
    credentialRows, issueAll, issue, accessToken, refreshSecretIssue, newPair, issuePair, secretBinding,

    /** A standalone access token for one record (getAccessToken). */
    issueAccessToken(app: Application, client: Client, entityId: number, forClientId: number | null, tx: Tx): Promise<string> {
      return issue(accessToken(app, client, entityId, forClientId), tx);
    },
  };
}
export type Issuer = ReturnType<typeof createIssuer>;
