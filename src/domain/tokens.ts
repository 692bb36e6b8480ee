import type { Storage, Tx } from './storage';
import type { Application } from './storage/applications';
import { ownerOf, type CredentialKind, type NewCredential, type StoredCredential } from './storage/credentials';
import { ApiError, errors } from '../errors';
import type { Client, Clock } from './clients';
import { randomToken, safeEqual, sha256Hex, type SecretBox } from './secrets';
import { MAX_CLOCK_SKEW_MS, parseSignatureDate, sign } from './signature';
import type { RecordVersions } from './versions';
import type { UnitOfWork, Work } from './ports';
import { event, recordSubject, type Origin } from './events';
import { sessionFacts, type SessionFacts } from './session';

/** docs/api.md#codes-and-tokens. Access tokens always live one hour; the others default as below. */
export const ACCESS_TOKEN_SECONDS = 3600;
/** An authorization code lives this long unless the caller asks otherwise (getAuthorizationCode's `lifetime`). */
export const AUTHORIZATION_CODE_SECONDS = 30;
const DEFAULT_SECONDS: Record<Exclude<CredentialKind, 'access_token' | 'social_token' | 'social_state' | 'refresh_secret' | 'email_change_undo' | 'email_reservation'>, number> = {
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

/** Parses `lifetime` (whole seconds, > 0) against the application's maximum for the kind. */
export function parseLifetime(app: Application, kind: LimitedKind, raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_SECONDS[kind];
  const max = wholeSeconds(app.settings[`max_lifetime.${kind}`], MAX_SECONDS[kind]);
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) {
    throw errors.invalidArgument('lifetime', 'must be a positive whole number of seconds, such as 300');
  }
  if (Number(raw) > max) {
    throw errors.invalidArgument('lifetime', `must be at most ${max} seconds for this application (application setting max_lifetime.${kind})`);
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
function proofOf(code: StoredCredential): Proof | null {
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

export interface TokenPair {
  access_token: string;
  expires_in: number;
  refresh_token: string;
  transaction_state?: unknown;
}

/** What the token service works with. */
export interface TokenDeps { db: Storage; clock: Clock; work: Work; versions: RecordVersions; box: SecretBox }

/** Issuing credentials: their rows, values and lifetimes (every kind but the social ones). */
function createIssuer({ db, clock, box }: TokenDeps) {
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
    ({ kind: 'access_token', app, entityId, client, forClientId, family: randomToken(16), seconds: ACCESS_TOKEN_SECONDS, extra });

  const refreshSeconds = (app: Application) => wholeSeconds(app.settings['refresh_token_lifetime'], DEFAULT_SECONDS.refresh_token);

  /** Values and rows of a new access + refresh token pair. */
  function newPair(app: Application) {
    const access = randomToken(20);
    const refresh = randomToken(20);
    const at = now().getTime();
    return {
      pair: { access_token: access, expires_in: ACCESS_TOKEN_SECONDS, refresh_token: refresh },
      rows: {
        access: { valueHash: sha256Hex(access), expiresAt: new Date(at + ACCESS_TOKEN_SECONDS * 1000) },
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
type Issuer = ReturnType<typeof createIssuer>;

/** What spending a code came to: its pair (and the record it was for), or why not. */
export type Exchange =
  | { pair: TokenPair; entityId: number | null }
  | { error: 'denied'; replayed?: string | null }
  | { error: 'mismatch'; expected: string | null }
  | { error: 'disabled' };

/** Spends a whole family at once (a spent refresh token or code came back: it has leaked). */
const familyRevoker = ({ db, clock, work }: TokenDeps) => (app: Application, family: string) =>
  work.run(({ tx }) => db.credentials.revokeFamily(app.id, family, clock.now(), tx), { readCommitted: true });

/**
 * The grants that spend one credential for new ones: a code exchanged, a refresh token rotated. A
 * spent credential presented again has leaked, and its family is revoked.
 */
function createGrants(deps: TokenDeps, { newPair, issuePair }: Issuer) {
  const { db, clock, work } = deps;
  const now = () => clock.now();
  const revokeFamily = familyRevoker(deps);
  /** Spends a code in `uow` and issues its pair, or says why not (see exchangeCode). */
  async function redeem(uow: UnitOfWork, app: Application, client: Client, code: string, redirectUri: string): Promise<Exchange> {
    const { tx } = uow;
    const hash = sha256Hex(code);
    const found = await db.credentials.find(app.id, 'authorization_code', hash, tx);
    if (!found || ownerOf(found) !== client.id) return { error: 'denied' };
    if (found.redirectUri !== redirectUri) return { error: 'mismatch', expected: found.redirectUri };
    if (!(await db.credentials.consume(app.id, 'authorization_code', hash, now(), tx, client.id))) {
      return { error: 'denied', replayed: found.usedAt ? found.family : null };
    }
    // the record's lock orders this with a disable: a code of a disabled user (mailed after it,
    // or issued by a sign-in in flight while it committed) gets nothing
    const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
    if (record?.disabledAt) return { error: 'disabled' };
    const pair = await issuePair(app, client, found.entityId, found.family ?? randomToken(16), tx, proofOf(found));
    const state = found.extra?.transaction_state;
    return { pair: state === undefined ? pair : { ...pair, transaction_state: state }, entityId: found.entityId };
  }

  /** An exchange's pair, or its refusal; a replayed code's family is revoked first. */
  async function settled(app: Application, redirectUri: string, outcome: Exchange): Promise<TokenPair> {
    if ('pair' in outcome) return outcome.pair;
    if (outcome.error === 'mismatch') {
      throw new ApiError('redirectUriMismatch', 'redirect_uri differs from the one used to obtain the code', {
        extra: { received_value: redirectUri, expected_value: outcome.expected },
      });
    }
    if (outcome.error === 'disabled') throw new ApiError('noAccessGrant', 'the user of this authorization code is disabled: it gets no tokens until an operator enables it again');
    if (outcome.replayed) await revokeFamily(app, outcome.replayed);
    throw new ApiError('noAccessGrant', 'the authorization code is invalid, expired, already used, or was issued for another client');
  }

  return {
    /**
     * grant_type=authorization_code. The code must be live, issued for `client`, and presented
     * with the redirect_uri it was issued with. A code presented again after its exchange revokes
     * the tokens it was exchanged for (RFC 6749 4.1.2).
     */
    async exchangeCode(app: Application, client: Client, code: string, redirectUri: string): Promise<TokenPair> {
      return settled(app, redirectUri, await work.run((uow) => redeem(uow, app, client, code, redirectUri)));
    },

    /** The exchange of a code inside the unit of work of a larger change (a password reset); `settleExchange` once it is done. */
    redeemCode: redeem,

    /** After the work of an exchange: its pair, or its refusal (a replayed code's family revoked first). */
    settleExchange: settled,

    /**
     * grant_type=refresh_token: spends the token and returns a new pair in the same family.
     * A spent token presented again has leaked: every token of its family is revoked.
     */
    async refresh(app: Application, client: Client, token: string): Promise<TokenPair> {
      const hash = sha256Hex(token);
      const { pair, rows } = newPair(app);
      // a disabled user's token does not rotate (the rotation's own condition, in its one round trip)
      if (await db.credentials.rotate(app.id, hash, client.id, rows, now())) return pair;
      const found = await db.credentials.find(app.id, 'refresh_token', hash);
      if (found?.usedAt && found.family) await revokeFamily(app, found.family);
      throw new ApiError('invalidRequestArgument', 'the refresh token is invalid, expired or already used; sign in again', {
        extra: { argument_name: 'refresh_token' },
      });
    },
  };
}

/** A mobile SDK's signed refresh of its access token (its session is single use, as a refresh token). */
function createSdkRefresh(deps: TokenDeps, { issueAll, accessToken, refreshSecretIssue, secretBinding }: Issuer) {
  const { db, clock, box, work } = deps;
  const now = () => clock.now();
  const revokeFamily = familyRevoker(deps);
  return {
    /**
     * /oauth/refresh_access_token: a new access token for the session the `presented` token identifies
     * (expired or not), when `signature` is base64(HMAC-SHA1(refresh secret, "refresh_access_token\n"
     * + date + "\n" + presented + "\n")) and `date` is within the Signature scheme's skew. The
     * session moves to the new token (single use, as a refresh token); a spent session presented
     * again has leaked, and its whole family is revoked.
     */
    async refreshWithSecret(app: Application, client: Client, presented: string, date: string, signature: string): Promise<{ access_token: string; expires_in: number }> {
      const ended = () => new ApiError('invalidAccessToken', 'the session of this access token is unknown, has ended or was already refreshed; sign in again');
      const when = parseSignatureDate(date);
      if (!when || Math.abs(now().getTime() - when.getTime()) > MAX_CLOCK_SKEW_MS) {
        throw errors.invalidArgument('date', `must be the current UTC time as YYYY-MM-DD HH:MM:SS, within ${MAX_CLOCK_SKEW_MS / 60_000} minutes of the server clock`);
      }
      const hash = sha256Hex(refreshSessionKey(presented));
      const session = await db.credentials.find(app.id, 'refresh_secret', hash);
      if (!session || ownerOf(session) !== client.id || session.entityId === null) throw ended();
      if ((await db.records.find(app.id, { id: session.entityId }))?.disabledAt) throw ended();
      let secret: string;
      try {
        secret = box.open(String(session.extra?.secret), secretBinding(hash));
      } catch {
        throw ended();
      }
      if (!safeEqual(sign(secret, `refresh_access_token\n${date}\n${presented}\n`), signature)) {
        throw errors.invalidArgument('signature', 'does not sign this access token and date with the refresh secret sent at sign-in');
      }
      const next = randomToken(20);
      const family = session.family ?? randomToken(16);
      const facts = sessionFacts(session);
      const moved = await work.run(async ({ tx }) => {
        if (!(await db.credentials.consume(app.id, 'refresh_secret', hash, now(), tx))) return false;
        // the token it replaces ends with it, if it had not expired yet
        await db.credentials.consume(app.id, 'access_token', sha256Hex(presented), now(), tx);
        await issueAll([
          // in the session's family with its facts, with no proof of a fresh sign-in
          { issue: { ...accessToken(app, client, session.entityId!, null, facts ? { session: facts } : null), family }, value: next },
          { issue: refreshSecretIssue(app, client, session.entityId!, family, next, secret, facts), value: refreshSessionKey(next) },
        ], tx);
        return true;
      });
      if (!moved) {
        const spent = await db.credentials.find(app.id, 'refresh_secret', hash);
        if (spent?.usedAt && spent.family) await revokeFamily(app, spent.family);
        throw ended();
      }
      return { access_token: next, expires_in: ACCESS_TOKEN_SECONDS };
    },
  };
}

/** One-time codes their holder spends for a change: verification codes, creation tokens. */
function createCodeSpending({ db, clock, work, versions }: TokenDeps) {
  const now = () => clock.now();
  return {
    /**
     * Spends a verification code and sets its time attribute; answers the record's uuid. Its holder
     * is taken to be the person the record is (the code was mailed to them).
     */
    async useVerificationCode(app: Application, code: string, origin: Origin): Promise<string> {
      const hash = sha256Hex(code);
      const unknown = () => errors.invalidArgument('verification_code', 'the code is not recognized, was already used, or has expired');
      return work.run(async (uow) => {
        const { tx } = uow;
        if (!(await db.credentials.consume(app.id, 'verification_code', hash, now(), tx))) throw unknown();
        const found = (await db.credentials.find(app.id, 'verification_code', hash, tx))!;
        const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
        // a disabled user's codes are spent when it is disabled; one issued around it does nothing either
        if (!record || record.disabledAt) throw unknown();
        const attribute = String(found.extra?.attribute_name ?? 'emailVerified');
        const changed = await db.records.setTime(record, attribute, now(), tx);
        const acting = { actor: { kind: 'account' as const, accountId: record.id }, origin };
        const { snapshot } = await versions.written(changed, tx);
        uow.record(event('record.updated', app.id, now(), acting, recordSubject(record.id), { attributes: [attribute] }, { snapshot }));
        if (attribute === 'emailVerified') uow.record(event('account.email_verified', app.id, now(), acting, recordSubject(record.id), {}));
        return record.uuid;
      });
    },

    /**
     * Spends a creation token. With a calling client: one issued for it (or by it for itself), or
     * for no client in particular. Without one (`null`): only a token issued for no client.
     */
    async consumeCreationToken(app: Application, token: string, clientId: number | null, tx: Tx): Promise<StoredCredential> {
      const hash = sha256Hex(token);
      const usable = (owner: number | null) => db.credentials.consume(app.id, 'creation_token', hash, now(), tx, owner);
      // a calling client may also spend a token bound to no client
      if (!(await usable(clientId)) && (clientId === null || !(await usable(null)))) {
        throw errors.invalidArgument('creation_token', 'the creation token is invalid, expired, already used, or was issued for another client');
      }
      return (await db.credentials.find(app.id, 'creation_token', hash, tx))!;
    },
  };
}

/**
 * Codes and tokens (docs/api.md#codes-and-tokens): random values of 160 bits, stored only as SHA-256 hashes,
 * checked for expiry on every use, spent by one conditional UPDATE so single use holds under
 * concurrency, and rotated in families so a replayed refresh token revokes its whole family.
 */
export function createTokenService(deps: TokenDeps) {
  const issuer = createIssuer(deps);
  // what only the grants use stays inside
  const { newPair, issuePair, secretBinding, ...issuing } = issuer;
  return { ...issuing, ...createGrants(deps, issuer), ...createSdkRefresh(deps, issuer), ...createCodeSpending(deps) };
}
export type TokenService = ReturnType<typeof createTokenService>;
