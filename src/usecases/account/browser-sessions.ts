import type { Client } from '../../domain/clients';
import type { StoredCredential } from '../../domain/storage/credentials';
import { endSessionsOf, oweLogouts, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import { Refusal, invalidField } from '../../domain/refusal';
import { randomToken, sha256Hex } from '../../domain/secrets';
import type { UnitOfWork } from '../../domain/ports';
import { sessionFacts, type SessionFacts, type SignInFactor } from '../../domain/session';
import type { UserRecord } from '../../domain/storage/records';
import { AUTHORIZATION_CODE_SECONDS, wholeSeconds } from '../../domain/tokens';
import { accountOfToken } from '../factors/account';
import { settleExchange, spendCode } from '../tokens/exchange-code';
import { asAccount, type CallContext } from '../services';

/**
 * The account page's browser sessions (docs/account-page.md): a browser signs in through the
 * hosted sign-in, which hands the page's own callback an authorization code; the code becomes a
 * `browser_session` credential whose value only the browser's HttpOnly cookie holds. The row keeps
 * the proof of that sign-in (when, with which factors), so the account's use cases judge a change
 * from it as from an access token, and when it was last seen.
 */

/** How long a browser session lives at most (`account_session_seconds`, 12 hours) and idle (`account_session_idle_seconds`, 30 minutes). */
export const browserSessionLimits = (app: CallContext['app']) => ({
  absolute: wholeSeconds(app.settings.account_session_seconds, 12 * 3600),
  idle: wholeSeconds(app.settings.account_session_idle_seconds, 30 * 60),
});

/** A session is marked seen at most this often (one UPDATE a minute per busy browser, not one per page). */
const SEEN_EVERY_MS = 60_000;
const MAX_DEVICE = 80;

/** The path of the account page's callback, on the application's own origin: a login client may always send a code there. */
export const ACCOUNT_CALLBACK_PATH = '/account/callback';

/** The account page's callback on the application's public address: a code sent there stays with this service. */
export const accountCallbackOf = (services: Pick<CallContext['services'], 'baseUrls'>, app: CallContext['app']) =>
  `${services.baseUrls.of(app.name)}${ACCOUNT_CALLBACK_PATH}`;

/** A browser session of the account page, or of the operators' console (docs/console.md). */
export type BrowserSessionKind = 'browser_session' | 'console_session';

/** A check of the account and the proof of its sign-in before a session starts (a Refusal when it may not). */
export type Admission = (record: UserRecord, proof: SessionFacts | undefined) => void;

/**
 * Spends the authorization code the hosted sign-in gave the account page (issued to `client` for
 * `redirectUri`) and starts a browser session with its proof. Answers the session's value (for
 * the cookie, never stored) and when it ends at the latest.
 */
export async function startBrowserSession(
  ctx: CallContext<'clock' | 'db' | 'tokens' | 'work'>,
  command: { client: Client; code: string; redirectUri: string; device: string; offer?: SessionOffer; interaction?: string; kind?: BrowserSessionKind; admit?: Admission },
): Promise<{ value: string; expiresAt: Date }> {
  const { clock, work, tokens } = ctx.services;
  const { absolute } = browserSessionLimits(ctx.app);
  const exchange = { app: ctx.app, client: command.client, code: command.code, redirectUri: command.redirectUri, origin: ctx.origin };
  const started = await work.run(async (uow) => {
    const spent = await spendCode(ctx.services, uow, exchange);
    if ('error' in spent) return spent;
    if (!spent.record) throw invalidField('code', 'was not issued by a sign-in of an account');
    // a refusal commits the code spent: it gives nothing, here or at the token endpoint
    try {
      command.admit?.(spent.record, sessionFacts({ extra: spent.proof ?? null }));
    } catch (e) {
      if (e instanceof Refusal) return { refused: e };
      throw e;
    }
    const now = clock.now();
    const value = randomToken(32);
    // at most `absolute` after the sign-in itself, not after this callback
    const signedInAt = Date.parse(String(spent.proof?.authenticated_at ?? ''));
    const end = Math.min(now.getTime() + absolute * 1000, Number.isFinite(signedInAt) ? signedInAt + absolute * 1000 : Infinity);
    const seconds = Math.max(1, Math.floor((end - now.getTime()) / 1000));
    await tokens.issueAll([{
      value,
      issue: {
        // the code's family: a replay of the code ends this session too
        kind: command.kind ?? 'browser_session', app: ctx.app, entityId: spent.record.id, client: command.client, family: spent.family, seconds,
        extra: {
          ...spent.proof, device: command.device.slice(0, MAX_DEVICE), seen: now.toISOString(), ...(command.offer && { offer: command.offer }),
          // the OpenID sign-in it was made for: that one takes it as a sign-in of its own (prompt=login, max_age)
          ...(command.interaction && { interaction: command.interaction }),
        },
      },
    }], uow.tx);
    return { value, expiresAt: new Date(now.getTime() + seconds * 1000) };
  });
  if ('refused' in started && started.refused) throw started.refused;
  if ('value' in started && started.value !== undefined) return { value: started.value, expiresAt: started.expiresAt! };
  // what the token endpoint would refuse, refused the same way (a replayed code revokes its family)
  await settleExchange(ctx.services, exchange, started);
  throw new Error('an exchange that failed settled without a refusal');
}

/**
 * The live browser session of a cookie's value: not spent, not past its expiry, not idle longer
 * than allowed, of an account that is not disabled. Marks it seen (at most once a minute).
 */
export async function browserSessionOf(ctx: CallContext<'clock' | 'db' | 'work'>, value: string, kind: BrowserSessionKind = 'browser_session'): Promise<StoredCredential | undefined> {
  const { db, clock, work } = ctx.services;
  if (!/^[0-9a-f]{64}$/.test(value)) return undefined;
  const now = clock.now();
  const row = await db.credentials.findActive(ctx.app.id, kind, sha256Hex(value), now);
  if (!row) return undefined;
  const seen = Date.parse(String(row.extra?.seen ?? ''));
  if (!Number.isFinite(seen) || now.getTime() - seen > browserSessionLimits(ctx.app).idle * 1000) return undefined;
  if (now.getTime() - seen < SEEN_EVERY_MS) return row;
  const extra = { ...row.extra, seen: now.toISOString() };
  const kept = await work.run((uow) => db.credentials.setExtra(ctx.app.id, kind, row.valueHash, extra, now, uow.tx));
  return kept ? { ...row, extra } : undefined;
}

/** Where a registration that offered a passkey goes back to: the app's login client, redirect URI and state, kept in its session. */
export interface SessionOffer { clientId: string; redirectUri: string; state?: string }

/** The offer a browser session was started for, if any. */
export function offerOf(session: StoredCredential): SessionOffer | undefined {
  const offer = session.extra?.offer as Partial<SessionOffer> | undefined;
  return typeof offer?.clientId === 'string' && typeof offer.redirectUri === 'string'
    ? { clientId: offer.clientId, redirectUri: offer.redirectUri, ...(typeof offer.state === 'string' && { state: offer.state }) } : undefined;
}

/**
 * The end of a registration's passkey offer (docs/account-page.md#a-passkey-after-registration):
 * the session the registration started, which exists for this offer only, is spent, and the app of
 * the offer gets an authorization code with the registration's proof (when and how the person
 * signed in), as the registration's own code would have had. Once: a second call, or one for
 * another client or redirect URI, is refused.
 */
export async function finishOffer(ctx: CallContext<'clock' | 'db' | 'tokens' | 'work'>, command: { session: StoredCredential; client: Client }): Promise<{ code: string; offer: SessionOffer }> {
  const { db, clock, work, tokens } = ctx.services;
  const offer = offerOf(command.session);
  if (!offer || offer.clientId !== command.client.clientId) throw invalidField('session', 'was not started by a registration that offered a passkey to this client');
  const { record } = await accountOfToken(ctx, command.session);
  const { authenticated_at: at } = command.session.extra ?? {};
  const session = sessionFacts(command.session);
  const code = await work.run(async (uow) => {
    if (!(await db.credentials.consume(ctx.app.id, 'browser_session', command.session.valueHash, clock.now(), uow.tx))) {
      throw invalidField('session', 'has ended: the app was given its code already');
    }
    const [value] = await tokens.issueAll([{
      issue: {
        kind: 'authorization_code', app: ctx.app, entityId: record.id, client: command.client, redirectUri: offer.redirectUri, family: randomToken(16),
        seconds: AUTHORIZATION_CODE_SECONDS, extra: { ...(typeof at === 'string' && { authenticated_at: at }), ...(session && { session }) },
      },
    }], uow.tx);
    return value;
  });
  return { code, offer };
}

/** One of an account's sessions as its owner sees it: where, how it signed in, when; never a token. */
export interface SessionView {
  /** What names it to end it (its family). */
  id: string;
  /** The browser of this very call. */
  current: boolean;
  /** A browser on the account page, an app's session (its refresh token), or an app's grant of the OpenID provider (a device's too). */
  kind: 'browser' | 'app';
  /** The login client it signed in through (its description, else its client_id). */
  client: string;
  /** The browser and system, for a browser session. */
  device?: string;
  signedInAt?: Date;
  /** A browser: its last page (to the minute); an app: its last refresh. */
  lastUsedAt?: Date;
  factors: SignInFactor[];
}

/**
 * The account's apps' sessions: their refresh tokens (the original API's, the OpenID provider's), and
 * the OpenID grants that have only an access token (a device that asked for no refresh token), one
 * per grant (its family).
 */
async function appSessionsOf(ctx: CallContext<'db'>, entityId: number, now: Date): Promise<StoredCredential[]> {
  const { db } = ctx.services;
  const [refresh, providerRefresh, providerAccess] = await Promise.all([
    db.credentials.liveOfRecord(ctx.app.id, entityId, 'refresh_token', now),
    db.credentials.liveOfRecord(ctx.app.id, entityId, 'oidc_refresh_token', now),
    db.credentials.liveOfRecord(ctx.app.id, entityId, 'oidc_access_token', now),
  ]);
  const byFamily = new Map<string, StoredCredential>();
  for (const r of [...refresh, ...providerRefresh, ...providerAccess]) if (r.family !== null && !byFamily.has(r.family)) byFamily.set(r.family, r);
  return [...byFamily.values()];
}

/**
 * Ends one session: its family's credentials; for an OpenID grant (its family is the grant's id),
 * the provider's grant and the state that names it too, so the app's tokens and its grant end
 * together. Answers how many credentials it spent.
 */
export async function endFamily(db: CallContext<'db'>['services']['db'], applicationId: number, entityId: number, family: string, now: Date, uow: UnitOfWork): Promise<number> {
  const { tx } = uow;
  // an app's grant ends: the app is told, when it has a back-channel logout address
  await oweLogouts(db, uow, applicationId, entityId, now, family);
  const spent = await db.credentials.revokeFamily(applicationId, family, now, tx);
  await db.oidcState.destroyGrant(applicationId, family, tx);
  await db.oidcState.destroy(applicationId, 'Grant', sha256Hex(family), tx);
  return spent;
}

/** The account's live sessions: its browser sessions and its apps' sessions (appSessionsOf), newest first. */
export async function listSessions(ctx: CallContext<'clock' | 'db'>, command: { token: StoredCredential }): Promise<SessionView[]> {
  const { db, clock } = ctx.services;
  const { record } = await accountOfToken(ctx, command.token);
  const now = clock.now();
  const [browsers, apps] = await Promise.all([
    db.credentials.liveOfRecord(ctx.app.id, record.id, 'browser_session', now),
    appSessionsOf(ctx, record.id, now),
  ]);
  const names = new Map<number, string>();
  for (const id of new Set([...browsers, ...apps].map((r) => r.clientId).filter((id): id is number => id !== null))) {
    const client = await db.clients.findById(ctx.app.id, id);
    if (client) names.set(id, client.description || client.clientId);
  }
  const idle = browserSessionLimits(ctx.app).idle * 1000;
  const views = [
    ...browsers.filter((r) => now.getTime() - Date.parse(String(r.extra?.seen ?? '')) <= idle).map((r) => viewOf(r, 'browser', names, command.token)),
    ...apps.map((r) => viewOf(r, 'app', names, command.token)),
  ].filter((v) => v.id !== '');
  return views.sort((a, b) => (b.lastUsedAt?.getTime() ?? 0) - (a.lastUsedAt?.getTime() ?? 0));
}

function viewOf(row: StoredCredential, kind: SessionView['kind'], names: Map<number, string>, current: StoredCredential): SessionView {
  const facts = sessionFacts(row);
  const at = facts?.auth_time ?? row.extra?.authenticated_at;
  const seen = kind === 'browser' ? new Date(String(row.extra?.seen)) : row.createdAt;
  return {
    id: row.family ?? '', current: row.family !== null && row.family === current.family, kind,
    client: (row.clientId !== null && names.get(row.clientId)) || '',
    ...(typeof row.extra?.device === 'string' && { device: row.extra.device }),
    ...(typeof at === 'string' && { signedInAt: new Date(at) }),
    ...(seen && { lastUsedAt: seen }),
    factors: facts?.factors ?? [],
  };
}

/**
 * Signs the account out: of one session (`session`: its id as listSessions named it), or of every
 * session but the caller's (`others`), or of the caller's own (`session` = its id). An event says
 * how many credentials it spent.
 */
export async function endSessions(ctx: CallContext<'clock' | 'db' | 'work'>, command: { token: StoredCredential; session?: string; others?: boolean }): Promise<{ spent: number }> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  const now = clock.now();
  let family: string | undefined;
  if (!command.others) {
    const live = [
      ...await db.credentials.liveOfRecord(ctx.app.id, record.id, 'browser_session', now),
      ...await appSessionsOf(ctx, record.id, now),
    ];
    family = live.find((r) => r.family !== null && r.family === command.session)?.family ?? undefined;
    if (family === undefined) throw invalidField('session', 'is not one of this account\'s live sessions (the list may be out of date: reload it)');
  }
  return work.run(async (uow) => {
    const spent = family === undefined
      ? await endSessionsOf(db, ctx.app.id, record.id, SESSION_KINDS, command.token.family, now, uow)
      : await endFamily(db, ctx.app.id, record.id, family, now, uow);
    if (spent === 0 && family !== undefined) throw new Refusal('nothing_to_do', 'this session has ended already');
    uow.record(event('account.signed_out', ctx.app.id, now, asAccount(ctx, record.id, client), recordSubject(record.id), { tokens: spent }));
    return { spent };
  }, { readCommitted: true });
}
