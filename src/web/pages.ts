import { createHash, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { keptUserAgent, type Origin } from '../domain/events';
import { peerBudgetKey } from '../domain/addresses';
import { DEFAULT_BRAND_COLOR, paletteOf, type Brand } from '../domain/brand';
import { safeEqual, type SecretBox } from '../domain/secrets';
import { isHttpUrl, settingOfList } from '../domain/settings';
import { brandOf } from '../domain/brand';
import { unsafeField } from '../domain/request-values';
import { WIDGET_PATH } from '../domain/proof-of-work';
import { errors } from '../errors';

export { brandOf };

import { filled, PAGE_LOCALES, textsOf, type PageLocale } from '../texts';

export { PAGE_LOCALES, type PageLocale };

/** The page's locale: `locale` if it is one of ours, else the first of Accept-Language that is, else en-US. */
export function pageLocale(requested: unknown, acceptLanguage: string | undefined): PageLocale {
  const known = (tag: string) => PAGE_LOCALES.find((l) => l.toLowerCase() === tag.toLowerCase() || l.slice(0, 2) === tag.toLowerCase().slice(0, 2));
  if (typeof requested === 'string' && known(requested)) return known(requested)!;
  for (const part of (acceptLanguage ?? '').split(',')) {
    const found = known(part.split(';')[0].trim());
    if (found) return found;
  }
  return 'en-US';
}

/** A text every page may show (templates/pages/strings.json, `common`), in the page's locale. */
export const text = (locale: PageLocale, key: string, values: Record<string, string> = {}) => filled(textsOf('common', locale)[key], values);

const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  google: 'Google', github: 'GitHub', gitlab: 'GitLab', microsoft: 'Microsoft', apple: 'Apple', facebook: 'Facebook',
  linkedin: 'LinkedIn', okta: 'Okta', auth0: 'Auth0', keycloak: 'Keycloak', twitter: 'Twitter', x: 'X',
};
/** A provider's name as people write it (`github` → GitHub, `acme-sso` → Acme sso). */
export const providerLabel = (name: string): string => (Object.hasOwn(PROVIDER_NAMES, name)
  ? PROVIDER_NAMES[name]
  : name.charAt(0).toUpperCase() + name.slice(1).replace(/-/g, ' '));

/**
 * Where a finished page sends people back: the setting `app_url` (the client's, else the
 * application's), else the origin of the client's first allowed redirect URI; undefined when
 * neither is set. As a link (a button) in the page's language, or ''.
 */
export function backToApp(app: Application, client: { settings: Record<string, string> } | undefined, locale: PageLocale): string {
  const url = client?.settings.app_url ?? app.settings.app_url;
  const first = settingOfList(client?.settings.redirect_uris ?? app.settings.redirect_uris).find(isHttpUrl);
  const target = url && isHttpUrl(url) ? url : first ? new URL(first).origin : undefined;
  if (!target) return '';
  // without an app_name the page does not know what the app is called: it says "the app"
  const label = app.settings.app_name ? text(locale, 'backToApp', { app: brandOf(app).name }) : text(locale, 'backToTheApp');
  return `<a class="button" href="${escape(target)}">${escape(label)}</a>`;
}

/** HTML-escapes a value for text and attribute positions. */
export const escape = (v: string) => v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The pages' style, as in the emails: grey page, white card, the accent colour on buttons and
 * links. Text on the accent is white when that reads (contrast ≥ 4.5), else dark; an accent too
 * light for links on white leaves them in the text colour.
 */
function styleFor(color: string): string {
  const { onAccent, accentText: link } = paletteOf(color);
  return '*{box-sizing:border-box}body{font:16px/1.5 Helvetica,Arial,system-ui,sans-serif;margin:0;padding:1.5rem 1rem;background:#f4f5f7;color:#1f2933}'
    + 'header{max-width:30rem;margin:0 auto 1rem;text-align:center;font-size:1.25rem;font-weight:bold;color:' + link + '}header img{max-height:3rem;max-width:100%;margin-bottom:.5rem}'
    + 'main{max-width:30rem;margin:0 auto;background:#fff;border-radius:8px;padding:1.5rem}h1{font-size:1.4rem;margin:0 0 1rem}'
    + 'label,legend{display:block;font-weight:bold;margin:1rem 0 .25rem;padding:0}.optional{font-weight:normal;color:#52606d}.visually-hidden{position:absolute!important;width:1px!important;height:1px!important;padding:0!important;margin:-1px!important;border:0!important;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}fieldset{border:0;padding:0;margin:1rem 0 0}fieldset legend{margin-top:0}label.choice{font-weight:normal}'
    + 'input:not([type=checkbox]):not([type=radio]),select,textarea{display:block;width:100%;padding:.6rem;border:1px solid #7b8794;border-radius:6px;font:inherit;color:inherit;background:#fff}'
    + '.date{display:flex;gap:.5rem}.date .part{flex:1}.date label{font-weight:normal;margin-top:0}'
    + '[aria-invalid=true]{border-color:#b42318!important;border-width:2px!important}.error{color:#b42318;margin:.25rem 0 0}.error:empty:not(.kept){display:none}'
    + '.tip{color:#52606d;font-size:.9rem;margin:.25rem 0 0}.notice{padding:.75rem;border-radius:6px;background:#eef1f6}'
    + '.notice[role=alert]{background:#fdecea;color:#7a1a12}.notice.done{background:#e3f4ea;color:#14532d}'
    + 'ul{list-style:none;padding:0}a{color:' + link + '}.links{margin-top:1.25rem}.links a{display:inline-block;margin:.25rem 1rem .25rem 0}'
    + 'button,a.button{display:block;width:100%;margin:1.25rem 0 .5rem;padding:.75rem 1rem;border:0;border-radius:6px;background:' + color + ';color:' + onAccent + ';'
    + 'font:inherit;font-weight:bold;text-align:center;text-decoration:none;cursor:pointer}'
    + 'a.button.provider{background:#fff;color:#1f2933;border:1px solid #7b8794;margin:.5rem 0}button.secondary,a.button.secondary{background:#fff;color:#1f2933;border:1px solid #7b8794;margin:.5rem 0}[hidden]{display:none!important}.qr svg{display:block;width:12rem;height:12rem;margin:1rem auto}.codes{columns:2;font-size:1.1rem}.codes code,#secret{overflow-wrap:anywhere}'
    + 'section{border-top:1px solid #e4e7eb;margin-top:1.5rem}h2{font-size:1.15rem;margin:1.25rem 0 .5rem}.items li{border:1px solid #e4e7eb;border-radius:6px;padding:.5rem .75rem;margin:.5rem 0}.items p{margin:.25rem 0}'
    + 'a:focus,button:focus,input:focus,select:focus,textarea:focus{outline:3px solid #0b57d0;outline-offset:2px}';
}
/**
 * A working page's layout (the operators' console): wider, a navigation bar, tables that scroll
 * in their own box on a phone (never the page), and inline forms. A table's words stay whole (a
 * column is as wide as its longest word); an id or a path in code breaks anywhere.
 */
const WIDE = 'header,main{max-width:72rem}nav{max-width:72rem;margin:0 auto 1rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center}'
  + 'nav form{margin:0}nav button{width:auto;margin:0;padding:.4rem .8rem}.scroll{overflow-x:auto;max-width:100%;position:relative}'
  + 'table{border-collapse:collapse;width:100%;font-size:.95rem}th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e4e7eb;vertical-align:top;overflow-wrap:break-word}'
  + 'th{font-weight:bold;overflow-wrap:normal;white-space:nowrap}code,pre{font-size:.9rem;white-space:pre-wrap;overflow-wrap:anywhere}.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end}.row>*{flex:1 1 12rem}'
  + '.row button{width:auto;margin:.25rem 0}.actions form{border:1px solid #e4e7eb;border-radius:6px;padding:.75rem;margin:0}.actions button{width:auto}'
  + '.actions .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));gap:.75rem;align-items:start}.actions label{margin-top:.25rem}.summary p{margin:.25rem 0 0}'
  + '.badge{display:inline-block;white-space:nowrap;overflow-wrap:normal;padding:0 .4rem;border-radius:4px;background:#eef1f6;font-size:.85rem}.badge.off{background:#fdecea;color:#7a1a12}'
  + '.items .changes li{border:0;padding:0;margin:.15rem 0}del{background:#fdecea;color:#7a1a12;text-decoration:line-through}ins{background:#e3f4ea;color:#14532d;text-decoration:none}'
  + '.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(9.5rem,1fr));gap:.75rem;margin:1rem 0}.tile{border:1px solid #e4e7eb;border-radius:6px;padding:.6rem .75rem}'
  + '.tile strong{display:block;font-size:1.6rem}.tile span{color:#52606d;font-size:.9rem}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}'
  + '.chart svg{display:block;width:100%;height:auto}.chart polyline{fill:none;stroke-width:2.5}.chart .grid{stroke:#e4e7eb}.chart .axis{font-size:11px;fill:#52606d}'
  + '.s-in{stroke:#0b57d0}.s-reg{stroke:#137333;stroke-dasharray:6 3}.s-fail{stroke:#b42318;stroke-dasharray:2 3}'
  + '.legend>span{display:inline-block;margin-right:1rem}.key{display:inline-block;width:1.5rem;height:0;border-top:3px solid;vertical-align:middle;margin-right:.4rem}'
  + '.key.s-in{border-color:#0b57d0}.key.s-reg{border-top-style:dashed;border-color:#137333}.key.s-fail{border-top-style:dotted;border-color:#b42318}.tall{max-height:22rem;overflow-y:auto}'
  + '.pairs{margin:0;font-size:.9rem}.pairs div{display:flex;flex-wrap:wrap;gap:0 .4rem}.pairs dt{color:#52606d}.pairs dd{margin:0;overflow-wrap:anywhere}'
  + 'details summary{cursor:pointer;font-size:.85rem;color:#52606d}.event{overflow-wrap:normal}td button{width:auto;white-space:nowrap;overflow-wrap:normal}'
  + '@media (min-width:60rem){.columns{display:grid;grid-template-columns:1fr 1fr;gap:1.5rem}}';
const styles = new Map<string, string>();
const AUTO_SUBMIT = 'document.forms[0].submit();';
/** A style's or script's CSP source, computed once per distinct text (a few: one style per brand colour, three scripts). */
const hashes = new Map<string, string>();
const hash = (s: string) => {
  let h = hashes.get(s);
  if (!h) {
    h = `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
    if (hashes.size < 200) hashes.set(s, h);
  }
  return h;
};
const DEFAULT_PAGE_BRAND: Brand = { name: 'Gatehouse', color: DEFAULT_BRAND_COLOR };

/** How a page is drawn: where its forms post, its scripts, its brand. */
export interface PageOptions {
  formAction?: string; autoSubmit?: boolean; brand?: Brand; script?: string | string[]; connect?: boolean; wide?: boolean;
  /** The page shows the proof-of-work widget: its files from this origin (script, style, worker), and the script that starts it. */
  widget?: boolean;
}

/**
 * Starts the proof-of-work widget in the element #pow (docs/proof-of-work.md): the module and its
 * language from this origin, the PBKDF2 worker registered, then the widget made with the challenge
 * the page rendered, solving at once; its solution goes in the form's hidden field `altcha`.
 */
const WIDGET_SCRIPT = `(()=>{const d=document.getElementById('pow');if(!d)return;const l=d.dataset.language;`
  + `import('${WIDGET_PATH}/altcha.js').then(()=>l?import('${WIDGET_PATH}/i18n-'+l+'.js'):null).then(()=>{`
  + `$altcha.algorithms.set('PBKDF2/SHA-256',()=>new Worker('${WIDGET_PATH}/pbkdf2.js'));`
  + `const w=document.createElement('altcha-widget');w.setAttribute('challenge',d.dataset.challenge);w.setAttribute('auto','onload');`
  + `w.setAttribute('name','altcha');if(l)w.setAttribute('language',l);d.append(w)})})();`;

/**
 * Sends a server-rendered page: strict Content-Security-Policy (no script but the ones hashed
 * here, no image but the application's logo, posting only to `formAction`), no framing, no
 * referrer, never cached. `script` adds one more script (hashed the same way).
 */
export function sendPage(res: Response, status: number, locale: PageLocale, title: string, body: string, options: PageOptions = {}): void {
  const page = renderPage(locale, title, body, options);
  res.status(status).set(page.headers).send(page.html);
}

/** A page's HTML and the headers it is sent with (sendPage; the OpenID provider's own pages send it themselves). */
export function renderPage(locale: PageLocale, title: string, body: string, options: PageOptions = {}): { headers: Record<string, string>; html: string } {
  const brand = options.brand ?? DEFAULT_PAGE_BRAND;
  const styleKey = `${brand.color}${options.wide ? ' wide' : ''}`;
  let style = styles.get(styleKey);
  if (!style) {
    style = styleFor(brand.color) + (options.wide ? WIDE : '');
    if (styles.size < 100) styles.set(styleKey, style);
  }
  const scripts = [...(options.autoSubmit ? [AUTO_SUBMIT] : []), ...(options.script === undefined ? [] : [options.script].flat()), ...(options.widget ? [WIDGET_SCRIPT] : [])];
  // the widget's files are this origin's own
  const self = options.widget ? "'self' " : '';
  const csp = [
    "default-src 'none'", `style-src ${self}${hash(style)}`, "base-uri 'none'", "frame-ancestors 'none'",
    `form-action ${options.formAction ?? "'none'"}`,
    ...(brand.logoUrl ? [`img-src ${new URL(brand.logoUrl).origin}`] : []),
    ...(scripts.length ? [`script-src ${self}${scripts.map(hash).join(' ')}`] : []),
    ...(options.widget ? ["worker-src 'self'"] : []),
    // a page's script may call the service's own API (a passkey's challenge)
    ...(options.connect ? ["connect-src 'self'"] : []),
  ].join('; ');
  // as in the emails: the logo (when set) above the application's name
  const header = `${brand.logoUrl ? `<img src="${escape(brand.logoUrl)}" alt=""><br>` : ''}${escape(brand.name)}`;
  return {
    headers: { 'Content-Security-Policy': csp, 'X-Frame-Options': 'DENY', 'Referrer-Policy': 'same-origin', 'Content-Type': 'text/html; charset=utf-8' },
    html: `<!doctype html><html lang="${locale.slice(0, 2)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">`
      + `<title>${escape(title)}</title><style>${style}</style>${options.widget ? `<link rel="stylesheet" href="${WIDGET_PATH}/altcha.css">` : ''}</head><body><header>${header}</header><main>${body}</main>`
      + scripts.map((s) => `<script>${s}</script>`).join('') + '</body></html>',
  };
}

/**
 * What went wrong on a page: a message for the person, in the page's language (`key` in the
 * pages' texts, with its values), and for the developers of the app that sent them here, what to
 * fix (English, from the service's own words: never a library's message or anything the request
 * brought).
 */
export interface PageProblem { key: string; values?: Record<string, string>; detail?: string }

/** An error page in the application's look: what went wrong, in the page's language, and the way back. */
export function sendError(res: Response, status: number, locale: PageLocale, app: Application | undefined, problem: PageProblem): void {
  const page = renderError(locale, app, problem);
  res.status(status).set(page.headers).send(page.html);
}

/** The error page's HTML and headers (sendError). */
export function renderError(locale: PageLocale, app: Application | undefined, problem: PageProblem): ReturnType<typeof renderPage> {
  const detail = problem.detail
    ? `<details><summary>${escape(text(locale, 'forDevelopers'))}</summary><p lang="en">${escape(problem.detail)}</p></details>`
    : '';
  return renderPage(locale, text(locale, 'failed'), `<h1>${escape(text(locale, 'failed'))}</h1>`
    + `<p role="alert">${escape(text(locale, problem.key, problem.values))}</p>${detail}<p>${escape(text(locale, 'back'))}</p>`, app ? { brand: brandOf(app) } : {});
}

/** The shape of a code or state a link carries (random base64url values; anything else is not looked up). */
/** Where a page's call came from, for the events of its use case: the request id and the peer's address. */
/** Where a page's change came from: its request, the address as the limits count it, the user agent cut and escaped. */
export const originOf = (req: Request, res: Response): Origin => ({ requestId: String(res.locals.requestId ?? ''), ...peerOrigin(req) });

/** Where a request came from without its request id: the address as the limits count it, the user agent cut and escaped. */
export const peerOrigin = (req: Request): Origin => ({ address: peerBudgetKey(req.ip), userAgent: keptUserAgent(req.headers['user-agent']) });

export const LINK_CODE = /^[A-Za-z0-9_-]{16,128}$/;

/** A form body's string fields (a parser may also give arrays or objects, which no page field takes). */
export const stringFields = (body: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries((body ?? {}) as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));

/** A page whose handler failed: the error handler answers with an error page (not JSON) in its language and look. */
export interface FailedPage { locale: PageLocale; app?: Application }
export const markFailedPage = (res: Response, page: FailedPage) => void (res.locals.failedPage = page);
export const failedPage = (res: Response): FailedPage | undefined => res.locals.failedPage as FailedPage | undefined;

/**
 * A page's form body parser: a body it refuses (too large, too many fields, not decodable) gets
 * an error page like every other failure of a page, not the API's JSON.
 */
export const pageForm = (options: { limit: string; parameterLimit?: number }) => [
  (req: Request, res: Response, next: NextFunction) => {
    markFailedPage(res, { locale: pageLocale(req.query.locale, req.headers['accept-language']) });
    next();
  },
  express.urlencoded({ extended: false, ...options }),
  // no field of any page holds a control character or more than the API takes (domain/request-values.ts)
  (req: Request, _res: Response, next: NextFunction) => {
    const found = unsafeField(req.body);
    next(found ? errors.unsafeInput(found[0], found[1]) : undefined);
  },
];

/** A page's handler with its application and locale (`locale`, then Accept-Language); failures go to the error handler, as a page. */
export const pageHandler = (
  resolveApp: (host: string | undefined) => Promise<Application>,
  work: (req: Request, res: Response, app: Application, locale: PageLocale) => Promise<void>,
) => async (req: Request, res: Response, next: NextFunction) => {
  const locale = pageLocale(req.query.locale ?? req.body?.locale, req.headers['accept-language']);
  let app: Application | undefined;
  try {
    app = await resolveApp(req.headers.host);
    await work(req, res, app, locale);
  } catch (e) {
    markFailedPage(res, { locale, app });
    next(e);
  }
};

/** The value of the request's cookie `name`, when it is one of ours (base64url characters only). */
export function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      return /^[A-Za-z0-9_-]+$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * Whether a page POST came from another site. Browsers name where a form was posted from in
 * `Sec-Fetch-Site`: only `same-origin` (or `none`, what the person did themselves) passes. A browser
 * too old to send it is judged by `Origin`, which must be this very origin: the pages' same-origin
 * referrer policy has browsers send it for their own forms, so `null` (a sandboxed frame, a
 * no-referrer page elsewhere) is another site. A client that sends neither (not a browser)
 * carries no victim's cookie: it goes on to the token check.
 */
export function crossSite(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  return origin !== undefined && origin !== `${req.protocol}://${req.get('host') ?? ''}`;
}

/** How long a page's form token works: as long as its cookie lives. */
const CSRF_SECONDS = 30 * 60;

/**
 * CSRF protection of a page's form: a random nonce in an HttpOnly, SameSite=Strict cookie (named
 * `__Host-…` and Secure behind TLS or when PUBLIC_BASE_URL is https, so no sibling host can set
 * it), and in a hidden field the time it was issued with a keyed MAC (SECRET_KEY) of both, which no
 * one without the key can make for a nonce they planted, and which ends with the cookie. A POST must
 * come from this origin (crossSite) and bring a cookie and a field that match (compared in
 * constant time). Over plain http the cookie keeps its page's path.
 */
export const csrf = (box: SecretBox, cookie: string, path: string, httpsBase: boolean) => {
  const secure = (req: Request) => req.secure || httpsBase;
  const nameFor = (req: Request) => (secure(req) ? `__Host-${cookie}` : cookie);
  const mac = (nonce: string, at: string) => box.tag(`${nonce}\n${at}`, `csrf ${cookie}`);
  return {
    issue(req: Request, res: Response): string {
      const nonce = randomBytes(24).toString('base64url');
      const at = String(Math.floor(Date.now() / 1000));
      res.cookie(nameFor(req), nonce, { httpOnly: true, sameSite: 'strict', path: secure(req) ? '/' : path, secure: secure(req), maxAge: CSRF_SECONDS * 1000 });
      return `${at}.${mac(nonce, at)}`;
    },
    matches(req: Request, sent: unknown): boolean {
      if (crossSite(req) || typeof sent !== 'string') return false;
      const held = cookieValue(req, nameFor(req)) ?? '';
      const [at, tag] = sent.split('.');
      const age = Date.now() / 1000 - Number(at);
      return held !== '' && /^\d{1,12}$/.test(at ?? '') && age >= -60 && age <= CSRF_SECONDS && tag !== undefined && safeEqual(tag, mac(held, at));
    },
    clear: (res: Response) => {
      res.clearCookie(cookie, { path });
      res.clearCookie(`__Host-${cookie}`, { path: '/', secure: true });
    },
  };
};
