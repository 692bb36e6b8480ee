import express, { type Response } from 'express';
import type { Application } from '../db/repositories/applications';
import { sha256Hex } from '../domain/secrets';
import { ApiError } from '../errors';
import type { Services } from '../http/context';
import { brandOf, csrf, escape, pageHandler, sendPage, type PageLocale } from './pages';

type Outcome = 'confirm' | 'verified' | 'used' | 'expired' | 'unknown' | 'incomplete' | 'forged';

const TEXT: Record<PageLocale, Record<Outcome | 'title' | 'button', string>> = {
  'en-US': {
    title: 'Verify your email address', button: 'Verify my email address',
    confirm: 'Confirm that this email address is yours.',
    verified: 'Your email address is verified. You can close this page and return to the app.',
    used: 'This link was already used, so your email address is probably verified. Sign in to the app to check.',
    expired: 'This link has expired. Ask the app to send you a new verification email.',
    unknown: 'This link is not recognized. Open the link from the newest verification email, whole.',
    incomplete: 'This link is incomplete. Open the link from the newest verification email, whole.',
    forged: 'This page expired before you confirmed. Open the link from the email again.',
  },
  'fr-FR': {
    title: 'Vérifiez votre adresse e-mail', button: 'Vérifier mon adresse e-mail',
    confirm: 'Confirmez que cette adresse e-mail est bien la vôtre.',
    verified: 'Votre adresse e-mail est vérifiée. Vous pouvez fermer cette page et revenir à l’application.',
    used: 'Ce lien a déjà servi : votre adresse e-mail est sans doute vérifiée. Connectez-vous à l’application pour le savoir.',
    expired: 'Ce lien a expiré. Demandez à l’application de vous envoyer un nouvel e-mail de vérification.',
    unknown: 'Ce lien n’est pas reconnu. Ouvrez le lien complet du dernier e-mail de vérification.',
    incomplete: 'Ce lien est incomplet. Ouvrez le lien complet du dernier e-mail de vérification.',
    forged: 'Cette page a expiré avant votre confirmation. Ouvrez à nouveau le lien de l’e-mail.',
  },
  'de-DE': {
    title: 'Bestätige deine E-Mail-Adresse', button: 'E-Mail-Adresse bestätigen',
    confirm: 'Bestätige, dass diese E-Mail-Adresse dir gehört.',
    verified: 'Deine E-Mail-Adresse ist bestätigt. Du kannst diese Seite schließen und zur App zurückkehren.',
    used: 'Dieser Link wurde schon verwendet, deine E-Mail-Adresse ist also wahrscheinlich bestätigt. Melde dich in der App an, um es zu prüfen.',
    expired: 'Dieser Link ist abgelaufen. Lass dir von der App eine neue Bestätigungs-E-Mail schicken.',
    unknown: 'Dieser Link ist unbekannt. Öffne den vollständigen Link aus der neuesten Bestätigungs-E-Mail.',
    incomplete: 'Dieser Link ist unvollständig. Öffne den vollständigen Link aus der neuesten Bestätigungs-E-Mail.',
    forged: 'Diese Seite ist vor deiner Bestätigung abgelaufen. Öffne den Link aus der E-Mail noch einmal.',
  },
  'es-ES': {
    title: 'Verifica tu correo electrónico', button: 'Verificar mi correo electrónico',
    confirm: 'Confirma que esta dirección de correo electrónico es tuya.',
    verified: 'Tu correo electrónico está verificado. Puedes cerrar esta página y volver a la aplicación.',
    used: 'Este enlace ya se usó, así que tu correo electrónico probablemente está verificado. Inicia sesión en la aplicación para comprobarlo.',
    expired: 'Este enlace ha caducado. Pide a la aplicación que te envíe un nuevo correo de verificación.',
    unknown: 'Este enlace no se reconoce. Abre el enlace completo del correo de verificación más reciente.',
    incomplete: 'Este enlace está incompleto. Abre el enlace completo del correo de verificación más reciente.',
    forged: 'Esta página caducó antes de que confirmaras. Vuelve a abrir el enlace del correo.',
  },
};

const COOKIE = 'gh_verify_csrf';
const CODE = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * GET /verify-email?verification_code=…, where verification emails link. The GET only shows the
 * state of the code and a button: mail scanners that fetch links never use the code. The POST
 * (the user's click, with a CSRF token bound to a cookie) uses it as /access/useVerificationCode
 * does. Every answer is a localized page with a next step.
 */
export function verifyEmailRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const { db, tokens, clock } = services;

  /** What the code's row says, without using it. */
  async function stateOf(app: Application, code: string): Promise<Outcome> {
    if (!CODE.test(code)) return code === '' ? 'incomplete' : 'unknown';
    const found = await db.credentials.find(app.id, 'verification_code', sha256Hex(code));
    if (!found) return 'unknown';
    if (found.usedAt) return 'used';
    return found.expiresAt <= clock.now() ? 'expired' : 'confirm';
  }

  const page = (res: Response, app: Application, locale: PageLocale, outcome: Outcome, status = 200, form?: { code: string; csrf: string }) => {
    const t = TEXT[locale];
    const body = `<h1>${escape(t.title)}</h1><p class="notice${outcome === 'verified' ? ' done' : ''}" role="${outcome === 'confirm' ? 'status' : 'alert'}">${escape(t[outcome])}</p>`
      + (form
        ? `<form method="post" action="/verify-email"><input type="hidden" name="verification_code" value="${escape(form.code)}">`
          + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
          + `<button type="submit">${escape(t.button)}</button></form>`
        : '');
    sendPage(res, status, locale, t.title, body, { ...(form ? { formAction: "'self'" } : {}), brand: brandOf(app) });
  };

  const guard = (work: Parameters<typeof pageHandler>[1]) => pageHandler(resolveApp, work);
  const token = csrf(COOKIE, '/verify-email');

  router.get('/verify-email', guard(async (req, res, app, locale) => {
    const code = typeof req.query.verification_code === 'string' ? req.query.verification_code : '';
    const state = await stateOf(app, code);
    if (state !== 'confirm') return page(res, app, locale, state, state === 'incomplete' || state === 'unknown' ? 404 : 410);
    page(res, app, locale, 'confirm', 200, { code, csrf: token.issue(req, res) });
  }));

  router.post('/verify-email', express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 }), guard(async (req, res, app, locale) => {
    const code = typeof req.body?.verification_code === 'string' ? req.body.verification_code : '';
    if (!token.matches(req, req.body?.csrf)) return page(res, app, locale, 'forged', 403);
    token.clear(res);
    try {
      if (!CODE.test(code)) return page(res, app, locale, 'unknown', 404);
      await tokens.useVerificationCode(app, code);
      page(res, app, locale, 'verified');
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      const state = await stateOf(app, code);
      page(res, app, locale, state === 'confirm' ? 'unknown' : state, 410);
    }
  }));
  return router;
}
