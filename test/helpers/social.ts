import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './processes';

/** A real OpenID Connect provider (oidc-provider) in a child process on 127.0.0.1. */
export async function startOidcProvider(redirectUris: string[]): Promise<{ issuer: string; stop(): Promise<void>; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, 'oidc-provider.mjs'), String(port), ...redirectUris], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stderr!.on('data', (d) => {
    out += d;
    if (/provider error/.test(String(d))) process.stderr.write(String(d));
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
    child.on('exit', (code) => reject(new Error(`the OpenID provider exited (${code}): ${out}`)));
  });
  return {
    issuer: `http://127.0.0.1:${port}`,
    process: child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A minimal browser over fetch: follows redirects by hand and keeps each host's cookies by path. */
/** A browser of cookies: `headers` go with every request (an `x-forwarded-for` a trusted proxy would add). */
export function cookieBrowser(headers: Record<string, string> = {}) {
  const jar = new Map<string, { name: string; value: string; path: string }>();
  const cookiesFor = (url: URL) => [...jar.entries()]
    .filter(([key, c]) => key.startsWith(`${url.host} `) && url.pathname.startsWith(c.path))
    .map(([, c]) => `${c.name}=${c.value}`).join('; ');
  const keep = (url: URL, res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((x) => x.trim());
      const [name, ...value] = pair.split('=');
      const path = attributes.find((a) => /^path=/i.test(a))?.slice(5) || '/';
      const key = `${url.host} ${path} ${name}`;
      if (/max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(key);
      else jar.set(key, { name, value: value.join('='), path });
    }
  };
  /** Requests `url` and follows redirects; answers the last response, its URL and its body. */
  async function go(
    url: string, init: { method?: string; form?: Record<string, string>; host?: string; stopAt?: (next: URL) => boolean } = {}, hops = 20,
  ): Promise<{ url: string; status: number; body: string }> {
    let target = new URL(url);
    let method = init.method ?? 'GET';
    let body: URLSearchParams | undefined = init.form ? new URLSearchParams(init.form) : undefined;
    for (let i = 0; i < hops; i++) {
      const res = await fetch(target, {
        method, body, redirect: 'manual',
        headers: { ...headers, cookie: cookiesFor(target), ...(body && { 'content-type': 'application/x-www-form-urlencoded' }) },
      });
      keep(target, res);
      const location = res.headers.get('location');
      if (location) state.lastLocation = new URL(location, target).toString();
      if (res.status >= 300 && res.status < 400 && location) {
        // a redirect the caller stops at (to an app that is not running): its URL, not followed
        if (init.stopAt?.(new URL(location, target))) return { url: new URL(location, target).toString(), status: res.status, body: '' };
        target = new URL(location, target);
        method = 'GET';
        body = undefined;
        continue;
      }
      return { url: target.toString(), status: res.status, body: await res.text() };
    }
    throw new Error('too many redirects');
  }
  const state: { lastLocation?: string } = {};
  return { go, jar, get lastLocation() { return state.lastLocation; } };
}

/** The action and hidden fields of the first form of a page. */
export function firstForm(html: string, base: string): { action: string; fields: Record<string, string> } {
  const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) throw new Error(`no form in:\n${html.replace(/<style>[\s\S]*?<\/style>/, "").slice(0, 2000)}`);
  const fields: Record<string, string> = {};
  for (const [input] of form[2].matchAll(/<input[^>]*>/gi)) {
    const name = /\bname="([^"]+)"/i.exec(input)?.[1];
    if (name) fields[name] = (/\bvalue="([^"]*)"/i.exec(input)?.[1] ?? '').replace(/&amp;/g, '&');
  }
  return { action: new URL(form[1].replace(/&amp;/g, '&'), base).toString(), fields };
}

/**
 * Signs in at the provider as `login` through Gatehouse's start URL, the provider's login and
 * consent pages, and Gatehouse's callback; answers the token the callback page posts, and that page.
 */
export async function socialToken(
  startUrl: string, login: string, browser = cookieBrowser(), tamper?: (authorize: URL) => void,
): Promise<{ token: string; page: { url: string; status: number; body: string }; tokenUrl: string }> {
  const page = await signInAtProvider(startUrl, login, browser, tamper);
  if (page.status !== 200) throw new Error(`the callback answered ${page.status}: ${page.body.slice(0, 500)}`);
  const posted = firstForm(page.body, page.url);
  return { token: posted.fields.token, page, tokenUrl: posted.action };
}

/**
 * From Gatehouse's start URL through the provider's login and consent pages to Gatehouse's
 * callback page, whatever it answers. `tamper` may change the authorization request first (as an
 * attacker between the browser and the provider would).
 */
export async function signInAtProvider(startUrl: string, login: string, browser = cookieBrowser(), tamper?: (authorize: URL) => void) {
  let page = await browser.go(startUrl, {}, tamper ? 1 : 20).catch(() => undefined);
  if (tamper) {
    const authorize = new URL(browser.lastLocation!);
    tamper(authorize);
    page = await browser.go(authorize.toString());
  }
  for (let step = 0; step < 4 && page && /\/interaction\//.test(page.url); step++) {
    const form = firstForm(page.body, page.url);
    page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, login, password: 'any' } });
  }
  return page!;
}
