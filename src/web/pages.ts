import { createHash, randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Application } from '../db/repositories/applications';
import { safeEqual } from '../domain/secrets';

/** The locales of the standard flow; pages fall back to en-US. */
export const PAGE_LOCALES = ['en-US', 'fr-FR', 'de-DE', 'es-ES'] as const;
export type PageLocale = (typeof PAGE_LOCALES)[number];

const TEXT: Record<PageLocale, Record<string, string>> = {
  'en-US': {
    signIn: 'Sign in', signInWith: 'Sign in with {provider}', continue: 'Continue', failed: 'The sign-in could not be completed',
    noProviders: 'No sign-in providers are set up for this application.', back: 'Go back to the app and try again.',
  },
  'fr-FR': {
    signIn: 'Se connecter', signInWith: 'Se connecter avec {provider}', continue: 'Continuer', failed: 'La connexion n’a pas pu aboutir',
    noProviders: 'Aucun fournisseur de connexion n’est configuré pour cette application.', back: 'Revenez à l’application et réessayez.',
  },
  'de-DE': {
    signIn: 'Anmelden', signInWith: 'Mit {provider} anmelden', continue: 'Weiter', failed: 'Die Anmeldung konnte nicht abgeschlossen werden',
    noProviders: 'Für diese Anwendung ist kein Anmeldedienst eingerichtet.', back: 'Kehre zur App zurück und versuche es erneut.',
  },
  'es-ES': {
    signIn: 'Iniciar sesión', signInWith: 'Iniciar sesión con {provider}', continue: 'Continuar', failed: 'No se pudo completar el inicio de sesión',
    noProviders: 'No hay proveedores de inicio de sesión configurados para esta aplicación.', back: 'Vuelve a la aplicación e inténtalo de nuevo.',
  },
};

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

export const text = (locale: PageLocale, key: string, values: Record<string, string> = {}) =>
  TEXT[locale][key].replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? '');

/** HTML-escapes a value for text and attribute positions. */
export const escape = (v: string) => v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = '*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}'
  + 'ul{list-style:none;padding:0}'
  + 'a.button,button{display:block;margin:.75rem 0;padding:.75rem 1rem;border:1px solid #1a1a1a;border-radius:.5rem;'
  + 'color:#1a1a1a;background:#fff;text-decoration:none;font:inherit;text-align:left;width:100%}'
  + 'a.button:focus,button:focus{outline:3px solid #0b57d0;outline-offset:2px}';
const AUTO_SUBMIT = 'document.forms[0].submit();';
const hash = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

/**
 * Sends a server-rendered page: strict Content-Security-Policy (no script but the one hashed
 * here, posting only to `formAction`), no framing, no referrer, never cached.
 */
export function sendPage(res: Response, status: number, locale: PageLocale, title: string, body: string, options: { formAction?: string; autoSubmit?: boolean } = {}): void {
  const csp = [
    "default-src 'none'", `style-src ${hash(STYLE)}`, "base-uri 'none'", "frame-ancestors 'none'",
    `form-action ${options.formAction ?? "'none'"}`, ...(options.autoSubmit ? [`script-src ${hash(AUTO_SUBMIT)}`] : []),
  ].join('; ');
  res.status(status)
    .set({ 'Content-Security-Policy': csp, 'X-Frame-Options': 'DENY', 'Referrer-Policy': 'no-referrer', 'Content-Type': 'text/html; charset=utf-8' })
    .send(`<!doctype html><html lang="${locale.slice(0, 2)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">`
      + `<title>${escape(title)}</title><style>${STYLE}</style></head><body><main>${body}</main>`
      + `${options.autoSubmit ? `<script>${AUTO_SUBMIT}</script>` : ''}</body></html>`);
}

/** An error page: what went wrong, in words, and the way back. */
export function sendError(res: Response, status: number, locale: PageLocale, why: string): void {
  sendPage(res, status, locale, text(locale, 'failed'), `<h1>${escape(text(locale, 'failed'))}</h1><p role="alert">${escape(why)}</p><p>${escape(text(locale, 'back'))}</p>`);
}

/** A page's handler with its application and locale (`locale`, then Accept-Language); failures go to the error handler. */
export const pageHandler = (
  resolveApp: (host: string | undefined) => Promise<Application>,
  work: (req: Request, res: Response, app: Application, locale: PageLocale) => Promise<void>,
) => async (req: Request, res: Response, next: NextFunction) => {
  try {
    await work(req, res, await resolveApp(req.headers.host), pageLocale(req.query.locale ?? req.body?.locale, req.headers['accept-language']));
  } catch (e) {
    next(e);
  }
};

/**
 * CSRF protection of a page's form: a random token in an HttpOnly, SameSite=Strict cookie scoped
 * to the page's path and in a hidden field; a POST must bring both, equal (compared in constant time).
 */
export const csrf = (cookie: string, path: string) => ({
  issue(req: Request, res: Response): string {
    const token = randomBytes(24).toString('base64url');
    res.cookie(cookie, token, { httpOnly: true, sameSite: 'strict', path, secure: req.secure, maxAge: 30 * 60_000 });
    return token;
  },
  matches(req: Request, sent: unknown): boolean {
    const held = new RegExp(`(?:^|;\\s*)${cookie}=([A-Za-z0-9_-]+)`).exec(req.headers.cookie ?? '')?.[1] ?? '';
    return typeof sent === 'string' && sent !== '' && held !== '' && safeEqual(sent, held);
  },
  clear: (res: Response) => void res.clearCookie(cookie, { path }),
});
