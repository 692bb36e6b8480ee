import http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { until } from '../helpers/processes';
import { oidcSignIn } from '../helpers/oidc-sign-in';
import { firstForm } from '../helpers/social';
import { deliverLogout } from '../../src/usecases/oidc/backchannel-logout';
import { logoutTransport } from '../../src/jobs/webhook-sender';

// docs/openid-connect.md#back-channel-logout, with openid-client 6 as the relying party and a small
// receiver that verifies each logout token with jose against the provider's JWKS, as an app would:
// every way a session ends (the app's own logout, an operator's sign-out everywhere, a disable,
// an erasure) sends the apps with a back-channel address a logout token naming the account and the
// session they were given; a receiver that fails is tried again until it takes it; every token's
// attempts are listed for the owner.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
let receiver: http.Server;
let address: string;
/** What the receiver answers next (a queue of statuses; 200 when empty). */
const answers: number[] = [];
interface Received { token: string; header: Record<string, unknown>; claims: Record<string, unknown>; contentType: string | undefined; fields: string[] }
const received: Received[] = [];
let jwks: ReturnType<typeof createRemoteJWKSet>;
/** The clients whose logout tokens the receiver takes (its audiences). */
const audiences: string[] = [];

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { WEBHOOKS_ALLOW_PRIVATE: 'true', LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  audiences.push(s.login.client_id);
  jwks = createRemoteJWKSet(new URL(`${served.base}/oidc/jwks`));
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const status = answers.shift() ?? 200;
      const token = new URLSearchParams(body).get('logout_token') ?? '';
      // the app's checks (Back-Channel Logout 1.0, 2.6): signed by the provider, for this app, with the logout event, no nonce
      jwtVerify(token, jwks, { issuer: served.base, audience: audiences, currentDate: clock.now() }).then((verified) => {
        received.push({ token, header: { ...verified.protectedHeader }, claims: { ...verified.payload }, contentType: req.headers['content-type'], fields: [...new URLSearchParams(body).keys()] });
        res.writeHead(status).end(status === 200 ? '' : 'not now');
      }, (err: Error) => res.writeHead(400).end(`not verified: ${err.message}`));
    });
  });
  const port = await new Promise<number>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve((receiver.address() as { port: number }).port)));
  address = `http://127.0.0.1:${port}/backchannel-logout`;
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token'], ['redirect_uris', 'https://app.example.com/cb'],
    ['backchannel_logout_uri', address], ['backchannel_logout_session_required', 'true'], ['post_logout_redirect_uris', 'https://app.example.com/signed-out']]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()) ?? resolve());
  await served?.close();
});

/** An account signed in to the app through the provider in a browser of its own: its uuid, the app's tokens, the browser. */
async function signedIn(account?: { email: string; uuid: string }, client?: { id: string; secret: string }) {
  const a = account ?? await s.account();
  const config = client ? await s.oidc.discovery(new URL(served.base), client.id, client.secret, undefined, { execute: [s.oidc.allowInsecureRequests] }) : await s.discovered();
  const at = await s.authorize(config, a.email);
  const tokens = await s.oidc.authorizationCodeGrant(config, at.back, { pkceCodeVerifier: at.verifier, expectedState: at.state, expectedNonce: at.nonce });
  return { ...a, config, tokens, browser: at.browser, sid: tokens.claims()!.sid as string };
}

/** The logout tokens received for `sub`, once `count` of them came. */
async function tokensFor(sub: string, count: number): Promise<Received[]> {
  await until(`${count} logout token(s) for the account arrived`, () => received.filter((r) => r.claims.sub === sub).length >= count, 30_000);
  return received.filter((r) => r.claims.sub === sub);
}

const logouts = async (clientId = s.login.client_id) => (await s.admin('/clients/logouts', { for_client_id: clientId, limit: '100' })).body;

/** A login client of the app's with `settings` (redirect URIs and grants as the login client's): its id and secret. */
async function loginClient(settings: Record<string, string>) {
  const { body } = await s.admin('/clients/add', { description: 'another app', features: '["login_client"]' });
  expect(body.stat).toBe('ok');
  for (const [key, value] of Object.entries({ grant_types: 'authorization_code refresh_token', redirect_uris: 'https://app.example.com/cb', ...settings })) {
    expect((await s.admin('/settings/set', { for_client_id: body.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
  return { id: body.client_id as string, secret: body.client_secret as string };
}

// the OpenID Foundation's back-channel logout plan (oidcc-backchannel-rp-initiated-logout-certification-test-plan), module by module
it('oidcc-backchannel-logout-discovery-endpoint-verification: discovery says back-channel logout is offered, with session ids; the app\'s ID tokens carry its sid', async () => {
  const metadata = (await s.discovered()).serverMetadata();
  expect(metadata).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  expect(metadata.end_session_endpoint).toBe(`${served.base}/oidc/session/end`);
  const a = await signedIn();
  expect(a.sid).toEqual(expect.any(String));
});

it('oidcc-backchannel-rp-initiated-logout: the app\'s own logout sends it to its post-logout address with its state, and a logout token for its session, verified against the JWKS; a silent sign-in after it is login_required', async () => {
  const a = await signedIn();
  const end = s.oidc.buildEndSessionUrl(a.config, { id_token_hint: a.tokens.id_token!, post_logout_redirect_uri: 'https://app.example.com/signed-out', state: 'bye' });
  const stopAt = (next: URL) => next.origin !== served.base;
  const confirm = await a.browser.go(end.toString(), { stopAt });
  const form = firstForm(confirm.body, confirm.url);
  const back = new URL((await a.browser.go(form.action, { method: 'POST', form: { ...form.fields, logout: 'yes' }, stopAt })).url);
  expect(`${back.origin}${back.pathname}`).toBe('https://app.example.com/signed-out');
  expect(Object.fromEntries(back.searchParams)).toEqual({ state: 'bye' });
  const [got] = await tokensFor(a.uuid, 1);
  // the request holds the token and nothing else (ValidateLogoutTokenSignature, ValidateLogoutTokenClaims, CheckLogoutTokenNoNonce, CheckLogoutTokenHasSubOrSid, the sub and sid of the ID token)
  expect(got.contentType).toBe('application/x-www-form-urlencoded');
  expect(got.fields).toEqual(['logout_token']);
  expect(got.header).toMatchObject({ typ: 'logout+jwt', alg: 'RS256', kid: expect.any(String) });
  expect(got.claims).toMatchObject({
    iss: served.base, aud: s.login.client_id, sub: a.uuid, sid: a.sid, jti: expect.any(String), iat: expect.any(Number),
    events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
  });
  expect(got.claims.exp).toBe((got.claims.iat as number) + 120);
  expect(got.claims).not.toHaveProperty('nonce');
  expect(a.tokens.claims()).toMatchObject({ sub: got.claims.sub, sid: got.claims.sid });
  // signed out: a silent sign-in in that browser is refused
  const silent = await s.authorize(a.config, a.email, { prompt: 'none', scope: 'openid' }, a.browser);
  expect(silent.back.searchParams.get('error')).toBe('login_required');
  await until('its delivery is listed as delivered', async () => (await logouts()).results.some((l: { id: string; state: string }) => l.id === got.claims.jti && l.state === 'delivered'), 10_000);
  const listed = (await logouts()).results.find((l: { id: string }) => l.id === got.claims.jti);
  expect(listed).toMatchObject({ sub: a.uuid, sid: a.sid, state: 'delivered', attempts: 1, last_status: 200 });
  // one token, from the outbox: the provider's own POST during the request is not made besides it
  expect(await tokensFor(a.uuid, 1)).toHaveLength(1);
});

it('an operator\'s sign-out everywhere: one token per session the app was given (two browsers)', async () => {
  const first = await signedIn();
  const second = await signedIn({ email: first.email, uuid: first.uuid });
  expect(second.sid).not.toBe(first.sid);
  const out = await s.admin('/entity.signOut', { type_name: 'user', uuid: first.uuid });
  expect(out.body.stat).toBe('ok');
  const got = await tokensFor(first.uuid, 2);
  expect(got.map((r) => r.claims.sid).sort()).toEqual([first.sid, second.sid].sort());
  expect(new Set(got.map((r) => r.claims.jti)).size).toBe(2);
});

it('a disable and an erasure tell the app too; an erased account\'s token keeps no uuid once sent', async () => {
  const disabled = await signedIn();
  expect((await s.admin('/entity.disable', { type_name: 'user', uuid: disabled.uuid })).body.stat).toBe('ok');
  expect((await tokensFor(disabled.uuid, 1))[0].claims.sid).toBe(disabled.sid);

  const erased = await signedIn();
  expect((await s.admin('/entity.erase', { type_name: 'user', uuid: erased.uuid })).body.stat).toBe('ok');
  const [got] = await tokensFor(erased.uuid, 1);
  expect(got.claims.sid).toBe(erased.sid);
  // sent: its row no longer names the account (kept without its uuid, or removed by the erasure's job)
  await until('the erased account\'s uuid is gone from the listing', async () => !(await logouts()).results.some((l: { sub: string | null }) => l.sub === erased.uuid), 10_000);
});

it('a receiver that fails is tried again until it takes the token (a new signature each time, the same jti)', async () => {
  const a = await signedIn();
  answers.push(503, 500);
  expect((await s.admin('/entity.signOut', { type_name: 'user', uuid: a.uuid })).body.stat).toBe('ok');
  const got = await tokensFor(a.uuid, 3);
  expect(new Set(got.map((r) => r.claims.jti)).size).toBe(1);
  await until('it is listed as delivered after three attempts', async () => (await logouts()).results.some(
    (l: { id: string; state: string; attempts: number }) => l.id === got[0].claims.jti && l.state === 'delivered' && l.attempts === 3), 10_000);
});

it('an app without a back-channel address is owed nothing; one that does not require sessions still gets the sid its ID tokens carry', async () => {
  const silent = await loginClient({});
  const a = await signedIn(undefined, silent);
  expect(a.tokens.claims()).not.toHaveProperty('sid');
  expect((await s.admin('/entity.signOut', { type_name: 'user', uuid: a.uuid })).body.stat).toBe('ok');
  expect((await logouts(silent.id)).results).toEqual([]);
  expect((await logouts()).results.some((l: { sub: string }) => l.sub === a.uuid)).toBe(false);

  const loose = await loginClient({ backchannel_logout_uri: address });
  audiences.push(loose.id);
  const b = await signedIn(undefined, loose);
  expect(b.sid).toEqual(expect.any(String));
  expect((await s.admin('/entity.signOut', { type_name: 'user', uuid: b.uuid })).body.stat).toBe('ok');
  expect((await tokensFor(b.uuid, 1))[0].claims).toMatchObject({ aud: loose.id, sub: b.uuid, sid: b.sid });
});

it('a token whose app no longer has an address is given up at once; one failing on its last attempt is given up, and said why', async () => {
  const gone = await loginClient({ backchannel_logout_uri: address });
  audiences.push(gone.id);
  const a = await signedIn(undefined, gone);
  answers.push(503);
  expect((await s.admin('/entity.signOut', { type_name: 'user', uuid: a.uuid })).body.stat).toBe('ok');
  await until('its first attempt failed', async () => (await logouts(gone.id)).results.some((l: { attempts: number }) => l.attempts === 1), 10_000);
  expect((await s.admin('/settings/set', { for_client_id: gone.id, key: 'backchannel_logout_uri', value: '' })).body.stat).toBe('ok');
  clock.advance(5_100);
  await until('it is given up', async () => (await logouts(gone.id)).results.some((l: { state: string }) => l.state === 'failed'), 15_000);
  expect((await logouts(gone.id)).results[0]).toMatchObject({ state: 'failed', attempts: 2, last_status: null, last_answer: 'the client has no back-channel logout address any more' });

  // the last attempt, answered 500: failed for good, its outbox row too
  const last = await loginClient({ backchannel_logout_uri: address });
  audiences.push(last.id);
  const b = await signedIn(undefined, last);
  answers.push(500, 500, 500, 500);
  expect((await s.admin('/entity.signOut', { type_name: 'user', uuid: b.uuid })).body.stat).toBe('ok');
  await until('its first attempt failed', async () => (await logouts(last.id)).results.some((l: { attempts: number }) => l.attempts === 1), 10_000);
  const { runtime } = served.t;
  const jti = (await logouts(last.id)).results[0].id as string;
  const ownRow = (await runtime.db.outbox.stragglers(new Date(Date.now() + 60_000), 1000))
    .find((r) => r.name === 'backchannel-logout' && (r.payload as { logout?: string }).logout === jti)!;
  expect(ownRow).toBeDefined();
  const result = await deliverLogout({ ...runtime.services, transport: logoutTransport({ allowPrivate: true }) }, { outboxId: ownRow.id, finalAttempt: true });
  expect(result).toEqual({ kind: 'failed', why: 'answered 500' });
  expect((await logouts(last.id)).results[0]).toMatchObject({ state: 'failed', attempts: 2, last_status: 500 });
  expect((await runtime.db.outbox.find(ownRow.id))!.status).toBe('failed');
  answers.length = 0;
});

describe('settings and listing refuse what they cannot use', () => {
  it.each([
    ['backchannel_logout_uri', 'not a url'],
    ['backchannel_logout_uri', 'https://app.example.com/logout#part'],
    ['backchannel_logout_uri', 'http://app.example.com/logout'],
    ['backchannel_logout_session_required', 'yes'],
  ])('%s = %j is refused with what to write', async (key, value) => {
    const res = await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value });
    expect(res.body).toMatchObject({ stat: 'error', error: expect.any(String), error_description: expect.stringContaining('must be'), request_id: expect.any(String) });
  });

  it('/clients/logouts: a missing or unknown client, a limit out of range', async () => {
    const missing = await s.admin('/clients/logouts', {});
    expect(missing.body).toMatchObject({ stat: 'error', error_description: expect.stringContaining('for_client_id') });
    const unknown = await s.admin('/clients/logouts', { for_client_id: 'nobody' });
    expect(unknown.body).toMatchObject({ stat: 'error', error_description: expect.stringContaining('for_client_id') });
    const limit = await s.admin('/clients/logouts', { for_client_id: s.login.client_id, limit: '1000' });
    expect(limit.body).toMatchObject({ stat: 'error', error_description: expect.stringContaining('limit') });
  });
});

it('an organization\'s directory deprovisioning the person (SCIM, active false): the app is told', async () => {
  const domain = `bcl-${Math.random().toString(36).slice(2, 10)}.example`;
  const org = await s.admin('/organizations/create', { name: `Org ${domain}`, slug: domain.replace(/\./g, '-') });
  expect((await s.admin('/organizations/domains/add', { organization_id: org.body.id, domain, verified: 'true' })).body.stat).toBe('ok');
  const token = (await s.admin('/organizations/scim/tokens/create', { organization_id: org.body.id })).body.token as string;
  const scim = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${served.base}/scim/v2${path}`, {
      method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const email = `ada@${domain}`;
  const created = await s.admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: 'correct horse battery', emailVerified: '2026-11-27 10:00:00' }) });
  expect(created.body.stat).toBe('ok');
  const uuid = (await s.admin('/entity', { type_name: 'user', id: String(created.body.id) })).body.result.uuid as string;
  const a = await signedIn({ email, uuid });
  const provisioned = await scim('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, emails: [{ primary: true, value: email }], active: true });
  expect(provisioned.status).toBe(201);
  const off = await scim('PATCH', `/Users/${provisioned.body.id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] });
  expect(off.status).toBe(200);
  expect((await tokensFor(uuid, 1))[0].claims).toMatchObject({ sub: uuid, sid: a.sid });
});
