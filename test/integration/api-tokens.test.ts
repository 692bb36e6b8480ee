import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn } from '../helpers/oidc-sign-in';

// docs/openid-connect.md#apis with openid-client 6 as the relying party and jose as the API: an API
// registered with its scopes; a client asking for it (resource, RFC 8707) gets a JWT access token
// (RFC 9068) the API verifies offline with the JWKS; userinfo refuses it; a refresh gives another;
// a client's own token has the scopes it was given; an unknown or removed API is invalid_target;
// each refusal of /apis/* is the API's error body naming its parameter.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
const ORDERS = 'https://orders.example.com/';

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token client_credentials'], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(() => served?.close());

async function ordersApi(tokenLifetime = '300') {
  const identifier = `${ORDERS}${Math.random().toString(36).slice(2, 8)}`;
  const added = await s.admin('/apis/add', { identifier, name: 'Orders', scopes: 'read:orders write:orders', token_lifetime: tokenLifetime });
  expect(added.body).toMatchObject({ stat: 'ok', result: { identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], token_lifetime: Number(tokenLifetime || '600'), client_scopes: {} } });
  return { identifier, id: added.body.id as string };
}

it('gives a JWT access token for an API the app asks for: verified with the JWKS, its scopes, its lifetime; userinfo refuses it; a refresh gives another', async () => {
  const a = await s.account();
  const { identifier } = await ordersApi();
  const config = await s.discovered();
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));

  const got = await s.authorize(config, a.email, { scope: 'openid offline_access read:orders', resource: identifier });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({ typ: 'at+jwt', alg: 'ES256' });
  const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: config.serverMetadata().issuer, audience: identifier, typ: 'at+jwt' });
  expect(payload).toMatchObject({ sub: a.uuid, client_id: s.login.client_id, scope: 'read:orders' });
  expect(typeof payload.jti).toBe('string');
  expect(payload.exp! - payload.iat!).toBe(300);
  // the ID token is the app's as ever
  expect(tokens.claims()).toMatchObject({ sub: a.uuid, aud: s.login.client_id });

  // an API's token is for that API: userinfo takes the token of a sign-in without a resource
  const refused = await fetch(config.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(refused.status).toBe(401);
  expect(refused.headers.get('www-authenticate')).toContain('invalid_token');

  // introspection takes the provider's opaque tokens: an API verifies its JWT itself, with the JWKS
  await expect(s.oidc.tokenIntrospection(config, tokens.access_token)).rejects.toMatchObject({ error: 'unsupported_token_type', status: 400 });
  expect(await s.oidc.tokenIntrospection(config, tokens.refresh_token!)).toMatchObject({ active: true, sub: a.uuid });
  // a refresh gives the API's token again, without naming it
  const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  expect((await jwtVerify(refreshed.access_token, jwks, { audience: identifier, typ: 'at+jwt' })).payload).toMatchObject({ sub: a.uuid, scope: 'read:orders' });

  // a scope the API does not define is not in its token
  const more = await s.authorize(config, a.email, { scope: 'openid read:orders delete:everything', resource: identifier });
  const moreTokens = await s.oidc.authorizationCodeGrant(config, more.back, { pkceCodeVerifier: more.verifier, expectedState: more.state, expectedNonce: more.nonce });
  expect((await jwtVerify(moreTokens.access_token, jwks, { audience: identifier })).payload.scope).toBe('read:orders');
});

it('refuses an unknown API, a removed one, and a client\'s own token for an API it was given no scope of', async () => {
  const a = await s.account();
  const { identifier, id } = await ordersApi();
  const config = await s.discovered();
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
  const unknown = await s.authorize(config, a.email, { scope: 'openid', resource: 'https://nobody.example.com/' });
  expect(unknown.back.searchParams.get('error')).toBe('invalid_target');
  expect(unknown.asked).toBe(false);

  // a client's own token: none until the API gives the client scopes, then those only
  await expect(s.oidc.clientCredentialsGrant(config, { resource: identifier, scope: 'read:orders' })).rejects.toMatchObject({ error: 'invalid_target' });
  const granted = await s.admin('/apis/grant', { id, for_client_id: s.login.client_id, scopes: 'read:orders' });
  expect(granted.body).toMatchObject({ stat: 'ok', result: { client_scopes: { [s.login.client_id]: ['read:orders'] } } });
  const own = await s.oidc.clientCredentialsGrant(config, { resource: identifier, scope: 'read:orders write:orders' });
  const ownToken = await jwtVerify(own.access_token, jwks, { audience: identifier, typ: 'at+jwt' });
  expect(ownToken.payload).toMatchObject({ client_id: s.login.client_id, sub: s.login.client_id, scope: 'read:orders' });
  expect(own).toMatchObject({ token_type: 'bearer', expires_in: 300, scope: 'read:orders' });
  // taken back: none again
  expect((await s.admin('/apis/grant', { id, for_client_id: s.login.client_id, scopes: '' })).body.result.client_scopes).toEqual({});
  await expect(s.oidc.clientCredentialsGrant(config, { resource: identifier, scope: 'read:orders' })).rejects.toMatchObject({ error: 'invalid_target' });

  // removed: its refresh tokens give the app's own token (userinfo's), no token for it, and live on; a code asked for it gives nothing
  const got = await s.authorize(config, a.email, { scope: 'openid offline_access read:orders', resource: identifier });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect((await s.admin('/apis/remove', { id })).body.stat).toBe('ok');
  const after = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  expect(after.access_token.split('.')).not.toHaveLength(3);
  expect((await s.oidc.fetchUserInfo(config, after.access_token, a.uuid)).sub).toBe(a.uuid);
  expect((await s.oidc.refreshTokenGrant(config, after.refresh_token!)).access_token).toBeTruthy();
  const gone = await s.authorize(config, a.email, { scope: 'openid', resource: identifier });
  expect(gone.back.searchParams.get('error')).toBe('invalid_target');
});

it('lists, updates and removes APIs, each change in the audit log; refuses what cannot be an API with the error body', async () => {
  const { identifier, id } = await ordersApi('');
  const listed = await s.admin('/apis/list', {});
  expect(listed.body.results.find((x: { id: string }) => x.id === id)).toMatchObject({ identifier, token_lifetime: 600 });
  const updated = await s.admin('/apis/update', { id, name: 'Orders v2', scopes: 'read:orders', token_lifetime: '120' });
  expect(updated.body).toMatchObject({ stat: 'ok', result: { name: 'Orders v2', scopes: ['read:orders'], token_lifetime: 120 } });

  const refusal = async (path: string, body: Record<string, string>, argument: string, says: RegExp) => {
    const r = await s.admin(path, body);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ stat: 'error', error: 'invalid_argument', argument_name: argument });
    expect(r.body.error_description).toMatch(says);
    expect(typeof r.body.request_id).toBe('string');
  };
  await refusal('/apis/add', { identifier: 'orders' }, 'identifier', /absolute URI/);
  await refusal('/apis/add', { identifier: 'https://api.example.com/#x' }, 'identifier', /fragment/);
  await refusal('/apis/add', { identifier: 'urn:gatehouse:organization:org_1' }, 'identifier', /organizations' resources/);
  await refusal('/apis/add', { identifier }, 'identifier', /already/);
  await refusal('/apis/add', { identifier: 'https://other.example.com/', scopes: 'openid read' }, 'scopes', /OpenID provider itself/);
  await refusal('/apis/add', { identifier: 'https://other.example.com/', scopes: 'read"x' }, 'scopes', /printable ASCII/);
  await refusal('/apis/add', { identifier: 'https://other.example.com/', token_lifetime: '10' }, 'token_lifetime', /60 to 86400/);
  await refusal('/apis/add', { identifier: 'https://other.example.com/', name: ' ' }, 'name', /1 to 200/);
  await refusal('/apis/update', { id: 'api_nope', name: 'x' }, 'id', /not an API/);
  await refusal('/apis/update', { id }, 'name', /nothing to change/);
  await refusal('/apis/grant', { id, for_client_id: s.login.client_id, scopes: 'write:orders' }, 'scopes', /does not define/);
  await refusal('/apis/grant', { id, for_client_id: 'nobody', scopes: 'read:orders' }, 'for_client_id', /not a client/);
  await refusal('/apis/remove', { id: 'api_nope' }, 'id', /not an API/);
  const missing = await s.admin('/apis/add', {});
  expect(missing.body).toMatchObject({ stat: 'error', argument_name: 'identifier' });

  expect((await s.admin('/apis/remove', { id })).body.stat).toBe('ok');
  const audit = await s.admin('/audit/list', { subject: `api:${id}` });
  const mine = audit.body.results.map((e: { type: string }) => e.type);
  expect(mine).toEqual(['api.removed', 'api.updated', 'api.added']);
});

it('roles give an account scopes of an API: with rbac its token has only those, listed in permissions; a change shows at the next refresh', async () => {
  const a = await s.account();
  const identifier = `${ORDERS}rbac-${Math.random().toString(36).slice(2, 8)}`;
  const api = await s.admin('/apis/add', { identifier, scopes: 'read:orders write:orders refund:orders', rbac: 'true', permissions_in_token: 'true' });
  expect(api.body.result).toMatchObject({ rbac: true, permissions_in_token: true });
  const tag = Math.random().toString(36).slice(2, 8);
  const viewer = `viewer_${tag}`;
  const clerk = `clerk_${tag}`;
  expect((await s.admin('/roles/define', { name: viewer, permissions: JSON.stringify({ [identifier]: ['read:orders'] }) })).body)
    .toMatchObject({ stat: 'ok', result: { name: viewer, permissions: { [identifier]: ['read:orders'] } } });
  expect((await s.admin('/roles/define', { name: clerk, description: 'takes orders', permissions: JSON.stringify({ [identifier]: ['write:orders', 'read:orders'] }) })).body.stat).toBe('ok');
  expect((await s.admin('/roles/assign', { uuid: a.uuid, roles: viewer })).body).toMatchObject({ stat: 'ok', results: [{ name: viewer }] });

  const config = await s.discovered();
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
  const got = await s.authorize(config, a.email, { scope: 'openid offline_access read:orders write:orders', resource: identifier });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect((await jwtVerify(tokens.access_token, jwks, { audience: identifier })).payload).toMatchObject({ scope: 'read:orders', permissions: ['read:orders'] });

  // given clerk: the next refresh has what the grant asked for and the roles now give
  expect((await s.admin('/roles/assign', { uuid: a.uuid, roles: clerk })).body.results.map((r: { name: string }) => r.name)).toEqual([clerk, viewer]);
  const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  expect((await jwtVerify(refreshed.access_token, jwks, { audience: identifier })).payload).toMatchObject({ scope: 'read:orders write:orders', permissions: ['read:orders', 'write:orders'] });
  expect((await s.admin('/roles/of', { uuid: a.uuid })).body.results.map((r: { name: string }) => r.name)).toEqual([clerk, viewer]);

  // both taken: a token with no scope of the API, and no permissions
  expect((await s.admin('/roles/unassign', { uuid: a.uuid, roles: `${viewer},${clerk}` })).body.results).toEqual([]);
  const bare = await s.oidc.refreshTokenGrant(config, refreshed.refresh_token!);
  const bareToken = (await jwtVerify(bare.access_token, jwks, { audience: identifier })).payload;
  expect(bareToken.permissions).toEqual([]);
  expect(bareToken.scope ?? '').toBe('');

  // a role removed leaves every account; the audit log has each change
  expect((await s.admin('/roles/assign', { uuid: a.uuid, roles: clerk })).body.stat).toBe('ok');
  expect((await s.admin('/roles/remove', { name: clerk })).body).toMatchObject({ stat: 'ok', held: 1 });
  expect((await s.admin('/roles/of', { uuid: a.uuid })).body.results).toEqual([]);
  const audit = await s.admin('/audit/list', { type: 'role.' });
  expect(audit.body.results.slice(0, 3).map((e: { type: string }) => e.type)).toEqual(['role.removed', 'role.defined', 'role.defined']);
});

it('refuses a role that cannot be, and an account or role that is not there, with the error body', async () => {
  const a = await s.account();
  const { identifier } = await ordersApi();
  const refusal = async (path: string, body: Record<string, string>, argument: string, says: RegExp, error = 'invalid_argument') => {
    const r = await s.admin(path, body);
    expect(r.body).toMatchObject({ stat: 'error', error, argument_name: argument });
    expect(r.body.error_description).toMatch(says);
  };
  await refusal('/roles/define', { name: 'Clerk!' }, 'name', /lower-case letters/);
  await refusal('/roles/define', { name: 'clerk', permissions: '{' }, 'permissions', /not JSON/);
  await refusal('/roles/define', { name: 'clerk', permissions: '["read"]' }, 'permissions', /JSON object/);
  await refusal('/roles/define', { name: 'clerk', permissions: JSON.stringify({ 'https://nobody.example.com/': ['read'] }) }, 'permissions', /not an API of this application/);
  await refusal('/roles/define', { name: 'clerk', permissions: JSON.stringify({ [identifier]: ['delete:orders'] }) }, 'permissions', /does not define/);
  await refusal('/roles/remove', { name: 'nobody_here' }, 'name', /not a role/);
  await refusal('/roles/assign', { uuid: a.uuid, roles: 'nobody_here' }, 'roles', /not a role/);
  await refusal('/roles/assign', { uuid: '00000000-0000-4000-8000-000000000000', roles: 'x' }, 'uuid', /no user record/, 'record_not_found');
  const missing = await s.admin('/roles/assign', { uuid: a.uuid });
  expect(missing.body).toMatchObject({ stat: 'error', argument_name: 'roles' });
});

it('an API\'s token in an organization (the exchange with organization and resource) carries the member\'s roles and permissions there', async () => {
  const a = await s.account();
  const { identifier } = await ordersApi();
  const org = (await s.admin('/organizations/create', { name: 'Acme', slug: `acme-${Math.random().toString(36).slice(2, 8)}`, owner_uuid: a.uuid })).body.id as string;
  const other = (await s.admin('/organizations/create', { name: 'Globex', slug: `globex-${Math.random().toString(36).slice(2, 8)}` })).body.id as string;
  const config = await s.discovered();
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
  const got = await s.authorize(config, a.email, { scope: 'openid offline_access read:orders', resource: identifier });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  const exchange = (organization: string) => s.oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: tokens.refresh_token!, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', organization, resource: identifier,
  });
  const inOrg = await jwtVerify((await exchange(org)).access_token, jwks, { audience: identifier, typ: 'at+jwt' });
  expect(inOrg.payload).toMatchObject({ sub: a.uuid, org_id: org, org_roles: ['owner'], org_permissions: [], scope: 'read:orders' });
  await expect(exchange(other)).rejects.toMatchObject({ error: 'invalid_target' });
  // an API the grant did not give: refused, in an organization or not
  const { identifier: another } = await ordersApi();
  const plain = await s.authorize(config, a.email, { scope: 'openid offline_access' });
  const plainTokens = await s.oidc.authorizationCodeGrant(config, plain.back, { pkceCodeVerifier: plain.verifier, expectedState: plain.state, expectedNonce: plain.nonce });
  for (const [token, resource] of [[tokens.refresh_token!, another], [plainTokens.refresh_token!, identifier]]) {
    await expect(s.oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:token-exchange', {
      subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', organization: org, resource,
    })).rejects.toMatchObject({ error: 'invalid_target' });
    await expect(s.oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:token-exchange', {
      subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', resource,
    })).rejects.toMatchObject({ error: 'invalid_target' });
  }
});
