import { createHash, randomUUID, webcrypto } from 'node:crypto';
import request from 'supertest';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, exportJWK, jwtVerify, SignJWT } from 'jose';
import { buildApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { createRuntime } from '../../src/runtime';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';
import { cookieBrowser, firstForm } from '../helpers/social';

// docs/openid-connect.md#pushed-authorization-requests, #signed-request-objects, #dpop and #fapi-20
// with openid-client 6 as the relying party: a pushed request's request_uri is spent once, of
// racing uses on two pods too; a client required to push, or to sign its requests, is refused
// otherwise, and an unsigned request object always; DPoP binds the tokens to the client's key (a
// replayed proof refused on any pod, a public client's refresh token kept to its key); a FAPI 2.0
// client gets tokens only through a pushed request with PKCE and DPoP.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token'], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(() => served?.close());

/** A browser at `url` (an authorization request), signing in with the password when asked; answers where it is sent back to. */
async function follow(url: URL | string, email: string, browser = cookieBrowser()) {
  const stopAt = (next: URL) => next.origin !== new URL(served.base).origin;
  let page = await browser.go(url.toString(), { stopAt });
  if (new URL(page.url).pathname === '/signin') {
    const form = firstForm(page.body, page.url);
    page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD }, stopAt });
  }
  return { back: new URL(page.url), page };
}

/** What an authorization request asks, with PKCE: its parameters and the verifier. */
async function asked(extra: Record<string, string> = {}) {
  const verifier = s.oidc.randomPKCECodeVerifier();
  const state = s.oidc.randomState();
  return {
    verifier, state,
    params: { redirect_uri: APP, scope: 'openid offline_access', state, code_challenge: await s.oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra },
  };
}

/** A login client with its own ES256 key (private_key_jwt) and `settings`; answers openid-client's view of it and its key. */
async function keyedClient(settings: Record<string, string>, grants = 'authorization_code refresh_token') {
  const added = await s.admin('/clients/add', { description: 'a client with a key', features: '["login_client"]' });
  const id = added.body.client_id as string;
  const pair = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const { d: _d, key_ops: _ops, ext: _ext, ...publicJwk } = await webcrypto.subtle.exportKey('jwk', pair.privateKey);
  for (const [key, value] of Object.entries({ jwks: JSON.stringify({ keys: [publicJwk] }), token_endpoint_auth_method: 'private_key_jwt', redirect_uris: APP, grant_types: grants, ...settings })) {
    expect((await s.admin('/settings/set', { for_client_id: id, key, value })).body).toMatchObject({ stat: 'ok' });
  }
  clock.advance(5_100);
  const config = await s.oidc.discovery(new URL(served.base), id, undefined, s.oidc.PrivateKeyJwt(pair.privateKey), { execute: [s.oidc.allowInsecureRequests] });
  return { id, pair, config };
}

describe('pushed authorization requests (RFC 9126)', () => {
  it('a pushed request signs in; its request_uri is spent once, and of three browsers racing with it one gets a code', async () => {
    const a = await s.account();
    const config = await s.discovered();
    expect(config.serverMetadata().pushed_authorization_request_endpoint).toBe(`${served.base}/oidc/request`);
    const { params, verifier, state } = await asked();
    const url = await s.oidc.buildAuthorizationUrlWithPAR(config, params);
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    const { back } = await follow(url, a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()).toMatchObject({ sub: a.uuid });
    // the same request_uri again: refused, no code
    const again = await follow(url, a.email);
    expect(again.back.searchParams.get('code')).toBeNull();
    expect(again.page.status === 400 || again.back.searchParams.get('error') === 'invalid_request').toBe(true);

    // one pushed request opened in three browsers, each signing in at once: it gives one code (a request_uri is
    // spent as its code is issued, by the conditional write every pod shares)
    const raced = await s.oidc.buildAuthorizationUrlWithPAR(config, (await asked()).params);
    const stopAt = (next: URL) => next.origin !== new URL(served.base).origin;
    const browsers = [cookieBrowser(), cookieBrowser(), cookieBrowser()];
    const pages = await Promise.all(browsers.map((b) => b.go(raced.toString(), { stopAt })));
    const finished = await Promise.all(browsers.map((b, i) => {
      const form = firstForm(pages[i].body, pages[i].url);
      return b.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: a.email, currentPassword: PASSWORD }, stopAt });
    }));
    expect(finished.filter((p) => new URL(p.url).searchParams.get('code') !== null)).toHaveLength(1);
  });

  it('one request_uri finished at once on two pods (two browsers signed in with it, their last steps sent to each pod): one code', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const url = await s.oidc.buildAuthorizationUrlWithPAR(config, (await asked()).params);
    const host = new URL(served.base).host;
    // each browser signs in with the pushed request, and stops before the provider's last step (its resume, where the code is issued)
    const resumes = await Promise.all([cookieBrowser(), cookieBrowser()].map(async (browser) => {
      const page = await browser.go(url.toString(), { stopAt: (next) => next.origin !== served.base });
      const form = firstForm(page.body, page.url);
      const at = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: a.email, currentPassword: PASSWORD },
        stopAt: (next) => next.pathname.startsWith('/oidc/auth/') || next.origin !== served.base });
      const cookie = [...browser.jar.entries()].filter(([key]) => key.startsWith(`${host} `)).map(([, c]) => `${c.name}=${c.value}`).join('; ');
      return { path: new URL(at.url).pathname, cookie };
    }));
    expect(resumes.map((r) => r.path)).toEqual([expect.stringMatching(/^\/oidc\/auth\/.+/), expect.stringMatching(/^\/oidc\/auth\/.+/)]);
    const second = createRuntime(served.t.backend.config, createLogger('silent'));
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    try {
      // each browser's last steps (its resume, the consent its offline_access implies, the resume after it) on its own pod, at once
      const finish = async (pod: Parameters<typeof request>[0], path: string, cookie: string): Promise<string | null> => {
        const jar = new Map(cookie.split('; ').map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)] as [string, string]));
        let next = path;
        for (let hop = 0; hop < 10; hop++) {
          const res = await request(pod).get(next).set('host', host).set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
          for (const line of ([] as string[]).concat(res.headers['set-cookie'] ?? [])) {
            const [pair] = line.split(';');
            const name = pair.slice(0, pair.indexOf('='));
            if (/expires=Thu, 01 Jan 1970|max-age=0/i.test(line)) jar.delete(name);
            else jar.set(name, pair.slice(pair.indexOf('=') + 1));
          }
          const location = new URL(String(res.headers.location ?? ''), served.base);
          if (res.status < 300 || res.status >= 400) return null;
          if (location.origin !== served.base) return location.searchParams.get('code');
          next = `${location.pathname}${location.search}`;
        }
        return null;
      };
      const codes = (await Promise.all(resumes.map((r, i) => finish(i === 0 ? served.t.app : podB, r.path, r.cookie)))).filter((c) => c !== null);
      expect(codes).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('a client required to push: its plain request is refused, its pushed one is not', async () => {
    const a = await s.account();
    const { config } = await keyedClient({ require_pushed_authorization_requests: 'true' });
    const plain = await asked();
    const refused = await follow(s.oidc.buildAuthorizationUrl(config, plain.params), a.email);
    expect(refused.back.searchParams.get('error')).toBe('invalid_request');
    expect(refused.back.searchParams.get('error_description')).toMatch(/Pushed Authorization Request/i);
    const pushed = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(config, pushed.params), a.email);
    expect((await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: pushed.verifier, expectedState: pushed.state })).claims()).toMatchObject({ sub: a.uuid });
  });
});

describe('signed request objects (RFC 9101)', () => {
  it('a client required to sign: a request object signed with its key signs in; a plain request and alg none are refused', async () => {
    const a = await s.account();
    const { config, pair } = await keyedClient({ require_signed_request_object: 'true' });
    expect(config.serverMetadata().request_object_signing_alg_values_supported).not.toContain('none');
    const signed = await asked();
    const url = await s.oidc.buildAuthorizationUrlWithJAR(config, signed.params, pair.privateKey);
    expect(url.searchParams.get('request')).toMatch(/^eyJ/);
    const { back } = await follow(url, a.email);
    expect((await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: signed.verifier, expectedState: signed.state })).claims()).toMatchObject({ sub: a.uuid });

    const plain = await asked();
    const refused = await follow(s.oidc.buildAuthorizationUrl(config, plain.params), a.email);
    expect(refused.back.searchParams.get('error')).toBe('invalid_request');
    const none = await asked();
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...none.params, client_id: config.clientMetadata().client_id, iss: config.clientMetadata().client_id, aud: served.base })).toString('base64url')}.`;
    const noneUrl = new URL(config.serverMetadata().authorization_endpoint!);
    noneUrl.search = new URLSearchParams({ client_id: config.clientMetadata().client_id, request: unsigned, redirect_uri: APP, response_type: 'code', scope: 'openid' }).toString();
    const noneAnswer = await follow(noneUrl, a.email);
    expect(noneAnswer.back.searchParams.get('error')).toBe('invalid_request_object');
  });
});

describe('DPoP (RFC 9449)', () => {
  it('tokens bound to the client\'s key: userinfo wants the proof; a replayed proof is refused on any pod; an API\'s JWT names the key', async () => {
    const a = await s.account();
    const config = await s.discovered();
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'EdDSA']));
    const keys = await s.oidc.randomDPoPKeyPair();
    const dpop = s.oidc.getDPoPHandle(config, keys);
    const { params, verifier, state } = await asked();
    const { back } = await follow(s.oidc.buildAuthorizationUrl(config, params), a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: dpop });
    expect(tokens.token_type).toBe('dpop');
    expect((await s.oidc.fetchUserInfo(config, tokens.access_token, a.uuid, { DPoP: dpop })).sub).toBe(a.uuid);
    // as a bearer token it is nothing
    const bearer = await fetch(config.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(bearer.status).toBe(401);

    // a proof caught on its way (a userinfo call) and sent again, to another pod: refused; and the refresh's proof offered a nonce
    let caught: { url: string; init: RequestInit; nonce: string | null } | undefined;
    const catching = await s.discovered();
    catching[s.oidc.customFetch] = async (url, init) => {
      const res = await fetch(url, init as RequestInit);
      caught = { url, init: init as RequestInit, nonce: res.headers.get('dpop-nonce') };
      return res;
    };
    const handle = s.oidc.getDPoPHandle(catching, keys);
    const refreshed = await s.oidc.refreshTokenGrant(catching, tokens.refresh_token!, undefined, { DPoP: handle });
    expect(refreshed.token_type).toBe('dpop');
    expect(caught!.nonce ?? '').toMatch(/^[\w-]{20,}$/);
    expect((await s.oidc.fetchUserInfo(catching, refreshed.access_token, a.uuid, { DPoP: handle })).sub).toBe(a.uuid);
    const headers = new Headers(caught!.init.headers as ConstructorParameters<typeof Headers>[0]);
    const second = createRuntime(served.t.backend.config, createLogger('silent'));
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    try {
      // (to the same address: a proof names the URL it is for)
      let replay = request(podB).get('/oidc/me').set('host', new URL(served.base).host);
      for (const [name, value] of headers) if (!['host', 'content-length'].includes(name)) replay = replay.set(name, value);
      const replayed = await replay;
      expect(replayed.status).toBe(401);
      expect(String(replayed.headers['www-authenticate'])).toMatch(/invalid_dpop_proof|invalid_token/);
      // (the control: a fresh proof of the same key, for the same token, at the same pod, is taken)
      const fresh = await new SignJWT({ htm: 'GET', htu: `${served.base}/oidc/me`, jti: randomUUID(), ath: createHash('sha256').update(refreshed.access_token).digest('base64url') })
        .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: await exportJWK(keys.publicKey) }).setIssuedAt().sign(keys.privateKey);
      const taken = await request(podB).get('/oidc/me').set('host', new URL(served.base).host).set('authorization', `DPoP ${refreshed.access_token}`).set('dpop', fresh);
      expect({ status: taken.status, sub: taken.body.sub }).toEqual({ status: 200, sub: a.uuid });
    } finally {
      await second.close();
    }

    // an API's JWT bound to the key: cnf.jkt
    const identifier = `https://dpop.example.com/${Math.random().toString(36).slice(2, 8)}`;
    expect((await s.admin('/apis/add', { identifier, scopes: 'read' })).body.stat).toBe('ok');
    const forApi = await asked({ resource: identifier, scope: 'openid read' });
    const apiBack = await follow(s.oidc.buildAuthorizationUrl(config, forApi.params), a.email);
    const apiTokens = await s.oidc.authorizationCodeGrant(config, apiBack.back, { pkceCodeVerifier: forApi.verifier, expectedState: forApi.state }, undefined, { DPoP: dpop });
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
    const { payload } = await jwtVerify(apiTokens.access_token, jwks, { audience: identifier, typ: 'at+jwt' });
    expect(payload.cnf).toEqual({ jkt: await calculateJwkThumbprint(await exportJWK(keys.publicKey)) });
  });

  it('one DPoP proof sent with two refresh tokens to the token endpoint of two pods at once: one is taken, the other is a replay (invalid_grant, as the provider says it), its refresh token unspent', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const keys = await s.oidc.randomDPoPKeyPair();
    const refreshTokens: string[] = [];
    for (const _ of [1, 2]) {
      const { params, verifier, state } = await asked();
      const { back } = await follow(s.oidc.buildAuthorizationUrl(config, params), a.email);
      refreshTokens.push((await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: s.oidc.getDPoPHandle(config, keys) })).refresh_token!);
    }
    const proof = async () => new SignJWT({ htm: 'POST', htu: `${served.base}/oidc/token`, jti: randomUUID() })
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: await exportJWK(keys.publicKey) }).setIssuedAt().sign(keys.privateKey);
    const second = createRuntime(served.t.backend.config, createLogger('silent'));
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    try {
      const send = (pod: Parameters<typeof request>[0], refreshToken: string, dpop: string) => request(pod).post('/oidc/token').set('host', new URL(served.base).host)
        .set('authorization', `Basic ${Buffer.from(`${s.login.client_id}:${s.login.client_secret}`).toString('base64')}`).set('dpop', dpop)
        .type('form').send({ grant_type: 'refresh_token', refresh_token: refreshToken });
      const once = await proof();
      const answers = await Promise.all([send(served.t.app, refreshTokens[0], once), send(podB, refreshTokens[1], once)]);
      expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
      const refused = answers.findIndex((r) => r.status === 400);
      expect(answers[refused].body.error).toBe('invalid_grant');
      // the refused request's refresh token was not spent: with a proof of its own it refreshes
      expect((await send(served.t.app, refreshTokens[refused], await proof())).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('a public client\'s refresh token is kept to its key: another key gets invalid_grant', async () => {
    const a = await s.account();
    const added = await s.admin('/clients/add', { description: 'a mobile app', features: '["login_client"]' });
    const id = added.body.client_id as string;
    for (const [key, value] of [['token_endpoint_auth_method', 'none'], ['redirect_uris', APP], ['grant_types', 'authorization_code refresh_token']]) {
      expect((await s.admin('/settings/set', { for_client_id: id, key, value })).body.stat).toBe('ok');
    }
    clock.advance(5_100);
    const config = await s.oidc.discovery(new URL(served.base), id, undefined, s.oidc.None(), { execute: [s.oidc.allowInsecureRequests] });
    const mine = s.oidc.getDPoPHandle(config, await s.oidc.randomDPoPKeyPair());
    const { params, verifier, state } = await asked();
    const { back } = await follow(s.oidc.buildAuthorizationUrl(config, params), a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: mine });
    const other = s.oidc.getDPoPHandle(config, await s.oidc.randomDPoPKeyPair());
    await expect(s.oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: other })).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(s.oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await s.oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: mine })).token_type).toBe('dpop');
  });
});

describe('the FAPI 2.0 security profile (security_profile=fapi2)', () => {
  it('tokens only through a pushed request with PKCE and DPoP; the response names the issuer; a fapi2 client without its own key is not served', async () => {
    const a = await s.account();
    const { config } = await keyedClient({ security_profile: 'fapi2' }, 'authorization_code refresh_token urn:ietf:params:oauth:grant-type:device_code');
    expect(config.serverMetadata().authorization_response_iss_parameter_supported).toBe(true);
    // not pushed: refused
    const plain = await asked();
    expect((await follow(s.oidc.buildAuthorizationUrl(config, plain.params), a.email)).back.searchParams.get('error')).toBe('invalid_request');
    // pushed without PKCE: refused at the push
    const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = (await asked()).params;
    await expect(s.oidc.buildAuthorizationUrlWithPAR(config, withoutPkce)).rejects.toMatchObject({ error: 'invalid_request', error_description: expect.stringMatching(/PKCE/) });
    // pushed with PKCE, redeemed with DPoP (the server's nonce asked for and given: openid-client retries with it)
    const dpop = s.oidc.getDPoPHandle(config, await s.oidc.randomDPoPKeyPair());
    const good = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(config, good.params, { DPoP: dpop }), a.email);
    expect(back.searchParams.get('iss')).toBe(served.base);
    const tokens = await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: good.verifier, expectedState: good.state }, undefined, { DPoP: dpop });
    expect(tokens.token_type).toBe('dpop');
    expect(tokens.claims()).toMatchObject({ sub: a.uuid });
    // a code bound to the key at the push, redeemed without a proof: refused; one pushed without a proof, redeemed without one: refused too
    const again = await asked();
    const second = await follow(await s.oidc.buildAuthorizationUrlWithPAR(config, again.params, { DPoP: dpop }), a.email);
    await expect(s.oidc.authorizationCodeGrant(config, second.back, { pkceCodeVerifier: again.verifier, expectedState: again.state })).rejects.toMatchObject({ error: 'invalid_grant' });
    const unbound = await asked();
    const third = await follow(await s.oidc.buildAuthorizationUrlWithPAR(config, unbound.params), a.email);
    await expect(s.oidc.authorizationCodeGrant(config, third.back, { pkceCodeVerifier: unbound.verifier, expectedState: unbound.state })).rejects.toMatchObject({ error: 'invalid_grant' });
    // (the same code with a proof: what was missing was the proof)
    expect((await s.oidc.authorizationCodeGrant(config, third.back, { pkceCodeVerifier: unbound.verifier, expectedState: unbound.state }, undefined, { DPoP: dpop })).token_type).toBe('dpop');
    expect(decodeJwt(tokens.id_token!).iss).toBe(served.base);

    // the token exchange gives bearer tokens: refused to a client whose tokens are bound; no device flow for it either
    await expect(s.oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:token-exchange', {
      subject_token: tokens.refresh_token!, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', organization: 'org_000000000000000000000000',
    }, { DPoP: dpop })).rejects.toMatchObject({ error: 'invalid_request' });
    await expect(s.oidc.initiateDeviceAuthorization(config, { scope: 'openid' })).rejects.toMatchObject({ error: expect.stringMatching(/^(unauthorized_client|invalid_request)$/) });

    // FAPI 2.0 signs with PS256, ES256 or EdDSA: a fapi2 client whose RSA key signs RS256 assertions is refused, PS256 ones are taken
    const rsa = await webcrypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
    const { d: _rd, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, key_ops: _rops, ext: _rext, alg: _alg, ...rsaPublic } = await webcrypto.subtle.exportKey('jwk', rsa.privateKey);
    const rsaClient = await s.admin('/clients/add', { description: 'fapi with an RSA key', features: '["login_client"]' });
    const rsaId = rsaClient.body.client_id as string;
    for (const [key, value] of [['jwks', JSON.stringify({ keys: [rsaPublic] })], ['token_endpoint_auth_method', 'private_key_jwt'], ['redirect_uris', APP], ['security_profile', 'fapi2']]) {
      expect((await s.admin('/settings/set', { for_client_id: rsaId, key, value })).body.stat).toBe('ok');
    }
    clock.advance(5_100);
    const rs256 = await s.oidc.discovery(new URL(served.base), rsaId, undefined, s.oidc.PrivateKeyJwt(rsa.privateKey), { execute: [s.oidc.allowInsecureRequests] });
    await expect(s.oidc.buildAuthorizationUrlWithPAR(rs256, (await asked()).params)).rejects.toMatchObject({ error: 'invalid_client' });
    const pss = await webcrypto.subtle.importKey('jwk', { ...(await webcrypto.subtle.exportKey('jwk', rsa.privateKey)), alg: 'PS256' }, { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['sign']);
    const ps256 = await s.oidc.discovery(new URL(served.base), rsaId, undefined, s.oidc.PrivateKeyJwt(pss), { execute: [s.oidc.allowInsecureRequests] });
    expect((await s.oidc.buildAuthorizationUrlWithPAR(ps256, (await asked()).params)).searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);

    // an RSA key and an EC key in its set: which one signs is not known, so the client is not served until its setting names it
    const ec = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    const { d: _ed, key_ops: _eops, ext: _eext, ...ecPublic } = await webcrypto.subtle.exportKey('jwk', ec.privateKey);
    expect((await s.admin('/settings/set', { for_client_id: rsaId, key: 'jwks', value: JSON.stringify({ keys: [rsaPublic, ecPublic] }) })).body.stat).toBe('ok');
    clock.advance(5_100);
    const es256 = await s.oidc.discovery(new URL(served.base), rsaId, undefined, s.oidc.PrivateKeyJwt(ec.privateKey), { execute: [s.oidc.allowInsecureRequests] });
    await expect(s.oidc.buildAuthorizationUrlWithPAR(es256, (await asked()).params)).rejects.toMatchObject({ error: 'invalid_client' });
    expect((await s.admin('/settings/set', { for_client_id: rsaId, key: 'token_endpoint_auth_signing_alg', value: 'RS512' })).body)
      .toMatchObject({ stat: 'error', error_description: expect.stringMatching(/must be ES256, ES384, PS256, RS256 or EdDSA/) });
    expect((await s.admin('/settings/set', { for_client_id: rsaId, key: 'token_endpoint_auth_signing_alg', value: 'ES256' })).body.stat).toBe('ok');
    clock.advance(5_100);
    expect((await s.oidc.buildAuthorizationUrlWithPAR(es256, (await asked()).params)).searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    await expect(s.oidc.buildAuthorizationUrlWithPAR(ps256, (await asked()).params)).rejects.toMatchObject({ error: 'invalid_client' });

    // a DPoP proof signed RS256 is refused whichever the client (discovery offers ES256, PS256 and EdDSA)
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'EdDSA']);
    const rsProof = await new SignJWT({ htm: 'POST', htu: `${served.base}/oidc/token`, jti: randomUUID() })
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'RS256', jwk: rsaPublic as never }).setIssuedAt().sign(rsa.privateKey);
    const rsRefused = await request(served.t.app).post('/oidc/token').set('host', new URL(served.base).host).set('dpop', rsProof)
      .set('authorization', `Basic ${Buffer.from(`${s.login.client_id}:${s.login.client_secret}`).toString('base64')}`)
      .type('form').send({ grant_type: 'refresh_token', refresh_token: 'whatever' });
    expect([rsRefused.status, rsRefused.body.error]).toEqual([400, 'invalid_dpop_proof']);

    // fapi2 with a shared secret: the client is not served
    const added = await s.admin('/clients/add', { description: 'fapi with a secret', features: '["login_client"]' });
    for (const [key, value] of [['security_profile', 'fapi2'], ['redirect_uris', APP]]) {
      expect((await s.admin('/settings/set', { for_client_id: added.body.client_id as string, key, value })).body.stat).toBe('ok');
    }
    clock.advance(5_100);
    const secretConfig = await s.oidc.discovery(new URL(served.base), added.body.client_id as string, added.body.client_secret as string, undefined, { execute: [s.oidc.allowInsecureRequests] });
    await expect(s.oidc.buildAuthorizationUrlWithPAR(secretConfig, (await asked()).params)).rejects.toMatchObject({ error: 'invalid_client' });
    expect((await s.admin('/settings/set', { for_client_id: added.body.client_id as string, key: 'security_profile', value: 'fapi1' })).body)
      .toMatchObject({ stat: 'error', error_description: expect.stringMatching(/must be fapi2/) });
  });
});
