import { createHash, randomBytes } from 'node:crypto';
import { base, form } from './harness';

/*
 * Live refresh tokens of Gatehouse's OpenID provider for the bench, each from the whole
 * authorization code flow a browser goes through: the authorization request with PKCE, the hosted
 * sign-in with the account's password, the provider's interactions, and the code exchanged at the
 * token endpoint with the login client's secret. One account (and one cookie jar) per token, as
 * distinct people sign in.
 */

export const CALLBACK = 'https://bench.example.com/';

/** The first form of a page: its action and hidden fields. */
export function firstForm(html: string, url: string): { action: string; fields: Record<string, string> } {
  const tag = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!tag) throw new Error(`no form on ${url}`);
  const fields: Record<string, string> = {};
  for (const input of tag[2].matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
    if (name) fields[name] = value.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'");
  }
  return { action: new URL(tag[1].replace(/&amp;/g, '&'), url).toString(), fields };
}

/** One browser: follows redirects, keeps cookies (one server), stops at the app's callback. */
export async function browse(url: string, init: { method?: string; form?: Record<string, string> } = {}, jar = new Map<string, string>(), at = base) {
  let target = url;
  let method = init.method ?? 'GET';
  let body = init.form ? new URLSearchParams(init.form).toString() : undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (target.startsWith(CALLBACK)) return { url: target, body: '', jar };
    // every request to the bench server's own address, whatever host its redirects name
    const local = new URL(target);
    const res = await fetch(`${at}${local.pathname}${local.search}`, {
      method, body, redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '), ...(body && { 'content-type': 'application/x-www-form-urlencoded' }) },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      if (/max-age=0|expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(pair.slice(0, at));
      else jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      target = new URL(location, target).toString();
      method = 'GET';
      body = undefined;
      continue;
    }
    return { url: target, body: await res.text(), jar };
  }
  throw new Error(`too many redirects from ${url}`);
}

/** Sends the app's callback to the bench's: once per application, then the provider reads it within 5 seconds. */
export async function openIdCallback(app: { owner: string; loginId: string; base?: string }): Promise<void> {
  const set = await form('/settings/set', { for_client_id: app.loginId, key: 'redirect_uris', value: CALLBACK }, app.owner, app.base ?? base);
  if (set.stat !== 'ok') throw new Error(JSON.stringify(set));
  await new Promise((r) => setTimeout(r, 5_500));
}

/**
 * `count` refresh tokens of Gatehouse's OpenID provider, each signed in by its own account through
 * the hosted sign-in. `options`: the accounts (their emails, made already), the scope, more
 * parameters of the authorization request (per account: an organization), and whether the
 * callback is set already.
 */
export async function openIdRefreshTokens(
  app: { owner: string; login: string; loginId: string; base?: string }, count: number, password: string,
  options: { emails?: string[]; scope?: string; extra?: (n: number) => Record<string, string>; callbackSet?: boolean } = {},
): Promise<string[]> {
  const at = app.base ?? base;
  if (!options.callbackSet) await openIdCallback(app);
  const tokens: string[] = [];
  const run = Date.now().toString(36);
  for (let n = 0; n < count; n++) {
    const email = options.emails?.[n] ?? `openid-${run}-${n}@example.com`;
    if (!options.emails) {
      const created = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password }) }, app.owner, at);
      if (created.stat !== 'ok') throw new Error(JSON.stringify(created));
    }
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      client_id: app.loginId, response_type: 'code', scope: options.scope ?? 'openid offline_access', prompt: 'consent', redirect_uri: CALLBACK, state: `s${n}`,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', ...options.extra?.(n),
    });
    const page = await browse(`${at}/oidc/auth?${query}`, {}, new Map(), at);
    const signIn = firstForm(page.body, page.url);
    const back = await browse(signIn.action, { method: 'POST', form: { ...signIn.fields, signInEmailAddress: email, currentPassword: password } }, page.jar, at);
    const code = new URL(back.url).searchParams.get('code');
    if (!code) throw new Error(`no code for ${email}: ended at ${back.url}`);
    const res = await fetch(`${at}/oidc/token`, {
      method: 'POST', headers: { authorization: app.login, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier }),
    });
    const pair = (await res.json()) as { refresh_token?: string };
    if (!pair.refresh_token) throw new Error(JSON.stringify(pair));
    tokens.push(pair.refresh_token);
  }
  return tokens;
}
