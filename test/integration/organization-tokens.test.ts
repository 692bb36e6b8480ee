import { createRemoteJWKSet, jwtVerify } from 'jose';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn } from '../helpers/oidc-sign-in';

// docs/organizations.md#tokens with openid-client 6 as the relying party: the scope organizations
// puts the account's organizations in the ID token and userinfo; the organization parameter gets an
// access token for that organization (a JWT verified offline with the JWKS, with org_id, org_roles
// and org_permissions); a token exchange switches to another organization; a member removed, or an
// organization deleted, gets no new token for it; an account of no organization gets invalid_target.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const REFRESH_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token'], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(() => served?.close());

async function twoOrganizations(uuid: string) {
  await s.admin('/organizations/roles/define', { name: 'billing', permissions: 'read:invoices pay:invoices' });
  const acme = (await s.admin('/organizations/create', { name: 'Acme', slug: `acme-${Math.random().toString(36).slice(2, 8)}`, owner_uuid: uuid })).body.id as string;
  const globex = (await s.admin('/organizations/create', { name: 'Globex', slug: `globex-${Math.random().toString(36).slice(2, 8)}` })).body.id as string;
  expect((await s.admin('/organizations/members/add', { organization_id: globex, uuid, roles: 'billing,member' })).body.stat).toBe('ok');
  return { acme, globex };
}

it('signs in asking for an organization: its access token is a JWT the JWKS verifies, with the account\'s roles and permissions; the ID token and userinfo list the organizations', async () => {
  const a = await s.account();
  const { acme, globex } = await twoOrganizations(a.uuid);
  const config = await s.discovered();
  expect(config.serverMetadata().grant_types_supported).toContain(TOKEN_EXCHANGE);
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));

  // the organizations of the account, in the ID token and at userinfo (a plain sign-in: its access token is userinfo's)
  const plain = await s.authorize(config, a.email, { scope: 'openid organizations offline_access' });
  const plainTokens = await s.oidc.authorizationCodeGrant(config, plain.back, { pkceCodeVerifier: plain.verifier, expectedState: plain.state, expectedNonce: plain.nonce });
  expect(plainTokens.claims()).toMatchObject({ organizations: [acme, globex], organization_roles: [`${acme}:owner`, `${globex}:billing`, `${globex}:member`] });
  const info = await s.oidc.fetchUserInfo(config, plainTokens.access_token, a.uuid);
  expect(info).toMatchObject({ sub: a.uuid, organizations: [acme, globex], organization_roles: [`${acme}:owner`, `${globex}:billing`, `${globex}:member`] });

  // the organization parameter: the code gives Acme's token
  const got = await s.authorize(config, a.email, { scope: 'openid offline_access', organization: acme });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: config.serverMetadata().issuer, audience: `urn:gatehouse:organization:${acme}` });
  expect(protectedHeader.alg).toBe('ES256');
  expect(payload).toMatchObject({ sub: a.uuid, org_id: acme, org_roles: ['owner'], org_permissions: [], client_id: s.login.client_id });
  // an organization's access token is for the app's API, not userinfo's (which takes the token of a sign-in without one)
  const refused = await fetch(config.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(refused.status).toBe(401);
  expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
  // introspection and revocation take opaque tokens only: the organization's JWT is unsupported_token_type there, its refresh token is theirs
  await expect(s.oidc.tokenIntrospection(config, tokens.access_token)).rejects.toMatchObject({ error: 'unsupported_token_type' });
  await expect(s.oidc.tokenRevocation(config, tokens.access_token)).rejects.toMatchObject({ error: 'unsupported_token_type' });
  expect(await s.oidc.tokenIntrospection(config, tokens.refresh_token!)).toMatchObject({ active: true, sub: a.uuid });

  // a refresh gives Acme's again
  const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  expect((await jwtVerify(refreshed.access_token, jwks)).payload).toMatchObject({ org_id: acme });

  // switching: the refresh token exchanged for Globex's token, with the billing permissions
  const switched = await s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: refreshed.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: globex });
  const globexToken = await jwtVerify(switched.access_token, jwks, { audience: `urn:gatehouse:organization:${globex}` });
  expect(globexToken.payload).toMatchObject({ sub: a.uuid, org_id: globex, org_roles: ['billing', 'member'], org_permissions: ['pay:invoices', 'read:invoices'] });
  // the refresh token was not spent by the exchange
  const again = await s.oidc.refreshTokenGrant(config, refreshed.refresh_token!);

  // removed from Acme: no new token for it, at the next refresh nor by exchange; Globex's still comes
  expect((await s.admin('/organizations/members/add', { organization_id: acme, uuid: (await s.account()).uuid, roles: 'owner' })).body.stat).toBe('ok');
  expect((await s.admin('/organizations/members/remove', { organization_id: acme, uuid: a.uuid })).body.stat).toBe('ok');
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: again.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: acme }))
    .rejects.toMatchObject({ error: 'invalid_target' });
  const stillGlobex = await s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: again.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: globex });
  expect((await jwtVerify(stillGlobex.access_token, jwks)).payload.org_id).toBe(globex);
  await expect(s.oidc.refreshTokenGrant(config, again.refresh_token!)).rejects.toMatchObject({ error: 'invalid_target' });

  // Globex deleted: no token for it either
  expect((await s.admin('/organizations/delete', { organization_id: globex })).body.stat).toBe('ok');
  const other = await s.authorize(config, a.email, { scope: 'openid offline_access' });
  const otherTokens = await s.oidc.authorizationCodeGrant(config, other.back, { pkceCodeVerifier: other.verifier, expectedState: other.state, expectedNonce: other.nonce });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: otherTokens.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: globex }))
    .rejects.toMatchObject({ error: 'invalid_target' });
});

it('refuses an organization the account is not a member of, an unknown one, a bad exchange', async () => {
  const a = await s.account();
  const { acme } = await twoOrganizations((await s.account()).uuid);
  const config = await s.discovered();
  // not a member: the app is sent back with invalid_target
  const refused = await s.authorize(config, a.email, { scope: 'openid offline_access', organization: acme });
  expect(refused.back.searchParams.get('error')).toBe('invalid_target');
  // no such organization: refused before anyone signs in
  const unknown = await s.authorize(config, a.email, { scope: 'openid', organization: 'org_000000000000000000000000' });
  expect(unknown.back.searchParams.get('error')).toBe('invalid_target');
  expect(unknown.asked).toBe(false);

  const got = await s.authorize(config, a.email, { scope: 'openid offline_access' });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: tokens.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: acme }))
    .rejects.toMatchObject({ error: 'invalid_target' });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: 'not-a-token', subject_token_type: REFRESH_TOKEN_TYPE, organization: acme }))
    .rejects.toMatchObject({ error: 'invalid_grant' });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: tokens.refresh_token!, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', organization: acme }))
    .rejects.toMatchObject({ error: 'invalid_request' });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: tokens.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE }))
    .rejects.toMatchObject({ error: 'invalid_request' });
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: tokens.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, resource: 'https://api.example.com' }))
    .rejects.toMatchObject({ error: 'invalid_target' });

  // a spent refresh token brought to the exchange: it leaked, and its grant ends, as at a refresh
  const rotated = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  await expect(s.oidc.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: tokens.refresh_token!, subject_token_type: REFRESH_TOKEN_TYPE, organization: acme }))
    .rejects.toMatchObject({ error: 'invalid_grant' });
  await expect(s.oidc.refreshTokenGrant(config, rotated.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

  // a client's own token (client credentials) is no member's: no organization's token
  expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key: 'grant_types', value: 'authorization_code refresh_token client_credentials' })).body.stat).toBe('ok');
  clock.advance(5_100);
  const machine = await s.discovered();
  await expect(s.oidc.clientCredentialsGrant(machine, { resource: `urn:gatehouse:organization:${acme}` })).rejects.toMatchObject({ error: 'invalid_target' });
  expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key: 'grant_types', value: 'authorization_code refresh_token' })).body.stat).toBe('ok');
  clock.advance(5_100);
});
