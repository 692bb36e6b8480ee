import express, { type Response } from 'express';
import type { Application } from '../db/repositories/applications';
import type { StoredCredential } from '../db/repositories/credentials';
import type { FlowVersion } from '../domain/flows';
import type { CompiledForm } from '../domain/flow-forms';
import { changesFrom } from '../domain/profile-fields';
import { sha256Hex } from '../domain/secrets';
import { ApiError } from '../errors';
import type { Services } from '../http/context';
import { csrf, escape, pageHandler, sendPage, type PageLocale } from './pages';

type Outcome = 'choose' | 'changed' | 'used' | 'expired' | 'unknown' | 'forged';
const FORM = 'newPasswordFormNoAuth';

const TEXT: Record<PageLocale, Record<Outcome | 'title' | 'button', string>> = {
  'en-US': {
    title: 'Choose a new password', button: 'Save my new password', choose: 'Enter your new password twice.',
    changed: 'Your password is changed, and you are signed out everywhere else. Sign in to the app with your new password.',
    used: 'This link was already used. If you did not finish, ask the app for a new password email.',
    expired: 'This link has expired. Ask the app to send you a new password email.',
    unknown: 'This link is not recognized. Open the link from the newest password email, whole.',
    forged: 'This page expired before you saved. Open the link from the email again.',
  },
  'fr-FR': {
    title: 'Choisissez un nouveau mot de passe', button: 'Enregistrer mon nouveau mot de passe', choose: 'Saisissez deux fois votre nouveau mot de passe.',
    changed: 'Votre mot de passe est changé et vous êtes déconnecté partout ailleurs. Connectez-vous à l’application avec votre nouveau mot de passe.',
    used: 'Ce lien a déjà servi. Si vous n’avez pas terminé, demandez à l’application un nouvel e-mail.',
    expired: 'Ce lien a expiré. Demandez à l’application de vous envoyer un nouvel e-mail.',
    unknown: 'Ce lien n’est pas reconnu. Ouvrez le lien complet du dernier e-mail.',
    forged: 'Cette page a expiré avant l’enregistrement. Ouvrez à nouveau le lien de l’e-mail.',
  },
  'de-DE': {
    title: 'Wähle ein neues Passwort', button: 'Neues Passwort speichern', choose: 'Gib dein neues Passwort zweimal ein.',
    changed: 'Dein Passwort ist geändert, und du bist überall sonst abgemeldet. Melde dich in der App mit dem neuen Passwort an.',
    used: 'Dieser Link wurde schon verwendet. Falls du nicht fertig geworden bist, fordere in der App eine neue E-Mail an.',
    expired: 'Dieser Link ist abgelaufen. Lass dir von der App eine neue E-Mail schicken.',
    unknown: 'Dieser Link ist unbekannt. Öffne den vollständigen Link aus der neuesten E-Mail.',
    forged: 'Diese Seite ist vor dem Speichern abgelaufen. Öffne den Link aus der E-Mail noch einmal.',
  },
  'es-ES': {
    title: 'Elige una contraseña nueva', button: 'Guardar mi contraseña nueva', choose: 'Escribe tu contraseña nueva dos veces.',
    changed: 'Tu contraseña ha cambiado y se ha cerrado tu sesión en todos los demás sitios. Inicia sesión en la aplicación con la contraseña nueva.',
    used: 'Este enlace ya se usó. Si no terminaste, pide a la aplicación un correo nuevo.',
    expired: 'Este enlace ha caducado. Pide a la aplicación que te envíe un correo nuevo.',
    unknown: 'Este enlace no se reconoce. Abre el enlace completo del correo más reciente.',
    forged: 'Esta página caducó antes de guardar. Vuelve a abrir el enlace del correo.',
  },
};

const COOKIE = 'gh_reset_csrf';
const CODE = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * GET /reset-password?code=…, where password emails link (the login client's default
 * `password_recover_url`): the flow's newPasswordFormNoAuth, its rules as HTML attributes and
 * again on the server. The POST (with a CSRF token bound to a cookie) checks the form first, so a
 * typo never spends the code; then it redeems the code for the client that sent the email, as
 * /oauth/token does, sets the password and ends every session of the account.
 */
export function resetPasswordRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const { db, tokens, clock, flows, passwords, outbox, versions } = services;

  /** The code's row and what it allows, without spending it. */
  async function codeState(app: Application, code: string): Promise<{ state: Outcome; row?: StoredCredential }> {
    if (!CODE.test(code)) return { state: 'unknown' };
    const row = await db.credentials.find(app.id, 'authorization_code', sha256Hex(code));
    if (!row || row.extra?.password_reset !== true || row.entityId === null) return { state: 'unknown' };
    if (row.usedAt) return { state: 'used', row };
    return { state: row.expiresAt <= clock.now() ? 'expired' : 'choose', row };
  }

  /** The client that sent the email, and its flow's form in the page's locale. */
  async function formFor(app: Application, row: StoredCredential, locale: PageLocale) {
    const id = row.forClientId ?? row.clientId;
    const stored = id === null ? undefined : await db.clients.findById(app.id, id);
    const client = stored && await services.clients.find(app.id, stored.clientId);
    if (!client) return undefined;
    const flow: FlowVersion = await flows.resolve(app, client.settings.default_flow_name ?? 'standard', client.settings.default_flow_version ?? '1', locale);
    const form = flows.form(app, flow, FORM);
    return form && { client, flow, form };
  }

  const page = (res: Response, locale: PageLocale, outcome: Outcome, status: number, form?: { code: string; csrf: string; flow: FlowVersion; form: CompiledForm; invalid: Record<string, string[]> }) => {
    const t = TEXT[locale];
    let body = `<h1>${escape(t.title)}</h1><p role="${outcome === 'choose' ? 'status' : 'alert'}">${escape(t[outcome])}</p>`;
    if (form) {
      const inputs = form.form.fields.map(({ name, required, field }) => {
        const id = `f-${name}`;
        const rule = (r: string) => field.validation.find((v) => v.rule === r)?.value;
        const errors = form.invalid[name] ?? [];
        const label = field.label ? flows.text(form.flow, field.label) : name;
        return `<label for="${escape(id)}">${escape(label)}</label>`
          + `<input id="${escape(id)}" name="${escape(name)}" type="password" autocomplete="new-password"${required ? ' required' : ''}`
          + `${typeof rule('minLength') === 'number' ? ` minlength="${rule('minLength')}"` : ''}${typeof rule('maxLength') === 'number' ? ` maxlength="${rule('maxLength')}"` : ''}`
          + `${errors.length ? ` aria-invalid="true" aria-describedby="${escape(id)}-error"` : ''}>`
          + (errors.length ? `<p id="${escape(id)}-error" role="alert">${errors.map(escape).join(' ')}</p>` : '');
      }).join('');
      body += `<form method="post" action="/reset-password">${inputs}<input type="hidden" name="code" value="${escape(form.code)}">`
        + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
        + `<button type="submit">${escape(t.button)}</button></form>`;
    }
    sendPage(res, status, locale, t.title, body, form ? { formAction: "'self'" } : {});
  };

  const guard = (work: Parameters<typeof pageHandler>[1]) => pageHandler(resolveApp, work);
  const token = csrf(COOKIE, '/reset-password');
  const statusOf = (state: Outcome) => (state === 'unknown' ? 404 : 410);

  router.get('/reset-password', guard(async (req, res, app, locale) => {
    const code = typeof req.query.code === 'string' ? req.query.code : '';
    const { state, row } = await codeState(app, code);
    const found = state === 'choose' && row ? await formFor(app, row, locale) : undefined;
    if (!found) return page(res, locale, state === 'choose' ? 'unknown' : state, statusOf(state));
    page(res, locale, 'choose', 200, { code, csrf: token.issue(req, res), flow: found.flow, form: found.form, invalid: {} });
  }));

  router.post('/reset-password', express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }), guard(async (req, res, app, locale) => {
    const body = Object.fromEntries(Object.entries(req.body ?? {}).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    if (!token.matches(req, body.csrf)) return page(res, locale, 'forged', 403);
    const code = body.code ?? '';
    const { state, row } = await codeState(app, code);
    const found = state === 'choose' && row ? await formFor(app, row, locale) : undefined;
    if (!found || !row) return page(res, locale, state === 'choose' ? 'unknown' : state, statusOf(state));

    // the rules first: a mistake keeps the code usable
    const result = await found.form.validate(body, { isUnique: async () => true });
    if (Object.keys(result.invalid).length > 0) {
      return page(res, locale, 'choose', 400, { code, csrf: token.issue(req, res), flow: found.flow, form: found.form, invalid: result.invalid });
    }
    const { password } = changesFrom(found.form, result.values);
    if (password === undefined) throw new Error(`${FORM} of flow ${found.flow.name} has no field that writes the password`);
    try {
      // as /oauth/token would: for the client that sent the email, with the redirect URI it was sent with
      await tokens.exchangeCode(app, found.client, code, row.redirectUri ?? '');
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return page(res, locale, 'used', 410);
    }
    const hash = await passwords.hash(password);
    await outbox.commitModels(async (tx) => {
      const now = clock.now();
      const locked = await db.entities.findForUpdate(app.id, row.entityId!, tx);
      if (!locked) throw new ApiError('recordNotFound', 'the account was deleted meanwhile');
      const changed = await db.entities.update(locked, { passwordHash: hash }, now, tx);
      // every session ends, the one just made for this page included: sign in again with the new password
      await db.credentials.revokeForEntity(app.id, locked.id, ['refresh_token', 'access_token', 'refresh_secret'], null, now, tx);
      return { result: undefined, jobs: [(await versions.written(changed, tx)).job] };
    });
    token.clear(res);
    page(res, locale, 'changed', 200);
  }));
  return router;
}
