import request from 'supertest';
import type { servedTestApp } from './browser';
import { basic } from './backend';
import { openidClient } from './openid-client';
import { cookieBrowser, firstForm } from './social';
import { oathtool } from './totp';

/** The app's callback: the login client's one redirect URI in the OpenID tests. */
export const APP = 'https://app.example.com/cb';
export const PASSWORD = 'correct horse battery';

export { oathtool };

/**
 * What the OpenID tests do through the front door of a served test app, with openid-client as the
 * relying party: the owner's admin calls, new accounts, discovery, and a browser signing in.
 */
export function oidcSignIn(served: Awaited<ReturnType<typeof servedTestApp>>, clock: { now(): Date }) {
  const oidc = openidClient();
  const owner = basic(served.t.local.clients.owner.client_id, served.t.local.clients.owner.client_secret);
  const login = served.t.local.clients.login;
  const admin = (path: string, body: Record<string, string>) => request(served.t.app).post(path).set('Authorization', owner).type('form').send(body);

  /** A new account with PASSWORD: its email and uuid. */
  async function account() {
    const email = `oidc-${Math.random().toString(36).slice(2)}@example.com`;
    const created = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace' }) });
    if (created.body.stat !== 'ok') throw new Error(JSON.stringify(created.body));
    const record = await admin('/entity', { type_name: 'user', id: String(created.body.id) });
    return { email, uuid: record.body.result.uuid as string };
  }

  /** openid-client's view of the provider, as the login client (plain http: a local test server). */
  const discovered = () => oidc.discovery(new URL(served.base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });

  /**
   * A browser signing in through the provider: the authorization request, the hosted sign-in with the
   * password, the interactions; answers the redirect to the app (code, state, iss), not followed.
   */
  async function authorize(
    config: Awaited<ReturnType<typeof discovered>>, email: string, extra: Record<string, string> = {}, browser = cookieBrowser(), authenticator?: string,
  ) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: APP, scope: 'openid email profile offline_access', prompt: 'consent', state, nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
    });
    // a parameter given as '' is not sent at all (prompt: '': a request that names no prompt)
    for (const [key, value] of Object.entries(extra)) if (value === '') url.searchParams.delete(key);
    const issuer = new URL(config.serverMetadata().issuer).origin;
    const stopAt = (next: URL) => next.origin !== issuer;
    let page = await browser.go(url.toString(), { stopAt });
    // whether the hosted sign-in asked (else the browser's session answered)
    const asked = new URL(page.url).pathname === '/signin';
    if (asked) {
      const form = firstForm(page.body, page.url);
      page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD }, stopAt });
      // the hosted sign-in's second step: the authenticator's next code
      if (authenticator && page.body.includes('name="mfa_token"')) {
        const step = firstForm(page.body, page.url);
        page = await browser.go(step.action, { method: 'POST', form: { ...step.fields, code: oathtool(authenticator, new Date(clock.now().getTime() + 30_000)) }, stopAt });
      }
    }
    return { back: new URL(page.url), page, verifier, state, nonce, browser, asked };
  }

  return { oidc, owner, login, admin, account, discovered, authorize };
}
