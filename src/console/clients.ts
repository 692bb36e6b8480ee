import type { Response } from 'express';
import { FEATURES, NoSuchClientError, parseFeatures } from '../domain/clients';
import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { addClient } from '../usecases/clients/add-client';
import { resetSecret } from '../usecases/clients/reset-secret';
import { applicationView, type ApplicationView } from '../usecases/operators/console-admin';
import { escape } from '../web/pages';
import { ADMIN_DONE, adminForm, appBase, doneNotice, inApp, q, say, time, type ConsoleParts, type Signed } from './parts';
import { listLogouts } from '../usecases/oidc/backchannel-logout';
import { settingForm, settingsTable } from './settings';

/**
 * An application's clients (docs/console.md#applications): listed on its page, each client's page
 * with its settings and the logout tokens sent to it, and for admins a client added or its secret reset (the secret shown once).
 */

/** The clients section of an application's page. */
export const clientsSection = (s: Signed, a: Application, clients: ApplicationView['clients']) => {
  const { locale } = s;
  return `<section aria-labelledby="h-clients"><h2 id="h-clients">${escape(say(locale, 'clients'))}</h2>`
    + `<div class="scroll"><table><thead><tr><th scope="col">client_id</th><th scope="col">${escape(say(locale, 'description'))}</th><th scope="col">${escape(say(locale, 'features'))}</th></tr></thead><tbody>`
    + clients.map((c) => `<tr><td><a href="${escape(`${appBase(a)}/clients/${encodeURIComponent(c.clientId)}${q({ locale })}`)}"><code>${escape(c.clientId)}</code></a></td>`
      + `<td>${escape(c.description)}</td><td>${escape(c.features.join(', '))}</td></tr>`).join('') + '</tbody></table></div>'
    + (roleMay(s.operator.role, 'administer') ? adminForm(s, `${appBase(a)}/clients`, say(locale, 'addClient'),
      `<label for="description">${escape(say(locale, 'description'))}</label><input id="description" name="description" type="text" required maxlength="200">`
      + `<fieldset><legend>${escape(say(locale, 'features'))}</legend>${FEATURES.map((f) => `<label class="choice"><input type="checkbox" name="features" value="${f}"${f === 'login_client' ? ' checked' : ''}> <code>${f}</code></label>`).join(' ')}</fieldset>`) : '')
    + '</section>';
};

/** A client's page: its features and settings. */
export const showClient = inApp(async ({ req, res, s, p }, a) => {
  const view = await applicationView(p.services, { app: a });
  const client = view.clients.find((c) => c.clientId === req.params.client);
  if (!client) return p.problem(res, 404, s.locale, say(s.locale, 'noSuchClient'), s);
  const { locale } = s;
  const admin = roleMay(s.operator.role, 'administer');
  p.page(res, 200, locale, say(locale, 'clientTitle', { client: client.description || client.clientId }),
    doneNotice(locale, ADMIN_DONE.find((d) => d === req.query.done))
    + `<p><a href="${escape(`${appBase(a)}${q({ locale })}`)}">${escape(say(locale, 'backToApp', { app: a.name }))}</a></p>`
    + `<p>client_id <code>${escape(client.clientId)}</code> · ${escape(client.features.join(', '))}</p>`
    + `<section aria-labelledby="h-settings"><h2 id="h-settings">${escape(say(locale, 'clientSettings'))}</h2>${settingsTable(client.settings, locale)}`
    + (admin ? settingForm(s, a, client.clientId) + adminForm(s, `${appBase(a)}/clients/${encodeURIComponent(client.clientId)}/secret`, say(locale, 'resetSecret'),
      `<p class="tip">${escape(say(locale, 'resetSecretTip'))}</p>`, true) : '')
    + '</section>'
    + await logoutsSection(p, s, a, client.clientId, client.settings), s);
});

/** The logout tokens sent to the client's back-channel logout address (docs/openid-connect.md#back-channel-logout), newest first, with their attempts. */
async function logoutsSection(p: ConsoleParts, s: Signed, a: Application, clientId: string, settings: Record<string, string>): Promise<string> {
  const { locale } = s;
  const logouts = await listLogouts(p.services, { app: a, clientId, limit: 20 });
  if (logouts.length === 0 && !settings.backchannel_logout_uri) return '';
  return `<section aria-labelledby="h-logouts"><h2 id="h-logouts">${escape(say(locale, 'backchannelLogouts'))}</h2>`
    + `<p class="tip">${escape(say(locale, 'backchannelLogoutsTip', { uri: settings.backchannel_logout_uri ?? '—' }))}</p>`
    + (logouts.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['created', 'logoutAccount', 'state', 'webhookAttempts', 'webhookLastAnswer'].map((k) => `<th scope="col">${escape(say(locale, k))}</th>`).join('')}</tr></thead><tbody>`
        + logouts.map((l) => `<tr><td>${escape(time(l.createdAt))}<br><code>${escape(l.id)}</code></td>`
          + `<td>${l.subject ? `<code>${escape(l.subject)}</code>` : '—'}${l.sid ? `<br><small>sid <code>${escape(l.sid)}</code></small>` : ''}</td>`
          + `<td>${escape(say(locale, `delivery_${l.state}`))}</td><td>${l.attempts}</td>`
          + `<td>${l.lastAttemptAt ? `${escape(l.lastStatus === null ? '—' : String(l.lastStatus))} · ${escape(String(l.lastMs ?? '—'))} ms<br><code>${escape((l.lastAnswer ?? '').slice(0, 200))}</code>` : '—'}</td></tr>`).join('')
        + '</tbody></table></div>')
    + '</section>';
}

/** A page that shows a client's secret once (never cached, like every page of the console). */
const secretPage = (p: ConsoleParts, res: Response, s: Signed, a: Application, clientId: string, secret: string, notes: string[]) =>
  p.page(res, 200, s.locale, say(s.locale, 'secretTitle'), `<p class="notice done" role="status">${escape(say(s.locale, 'secretOnce'))}</p>`
    + `<div class="scroll"><table><tbody><tr><th scope="row">client_id</th><td><code>${escape(clientId)}</code></td></tr>`
    + `<tr><th scope="row">client_secret</th><td><code id="secret">${escape(secret)}</code></td></tr></tbody></table></div>`
    + notes.map((n) => `<p>${escape(n)}</p>`).join('')
    + `<p><a href="${escape(`${appBase(a)}/clients/${encodeURIComponent(clientId)}${q({ locale: s.locale })}`)}">${escape(say(s.locale, 'toClient'))}</a></p>`, s);

/** A client added: its secret, once. (Its features come as one field each: the route reads them from the raw form.) */
export const createClient = inApp(async ({ req, res, s, p, body }, a) => {
  const raw = (req.body as Record<string, unknown>).features;
  const features = parseFeatures((Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((f): f is string => typeof f === 'string'), 'features');
  if ((body.description ?? '').trim() === '') throw invalidField('description', say(s.locale, 'describeClient'));
  const added = await addClient(p.services, { applicationId: a.id, acting: s.operator.acting, description: body.description!.trim().slice(0, 200), features });
  secretPage(p, res, s, a, added.client.clientId, added.secret, [
    ...(added.settings ? [say(s.locale, 'clientFlow', { flow: `${added.settings.default_flow_name} ${added.settings.default_flow_version}` })] : []),
    ...(added.own ? [say(s.locale, 'setRedirects')] : []),
  ]);
});

/** A client's secret reset, confirmed: the new one, once; the old one ends. */
export const resetClientSecret = inApp(async ({ req, res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  const clientId = String(req.params.client);
  let secret: string;
  try {
    secret = await resetSecret(p.services, { applicationId: a.id, acting: s.operator.acting, forClientId: clientId });
  } catch (e) {
    if (e instanceof NoSuchClientError) return p.problem(res, 404, s.locale, say(s.locale, 'noSuchClient'), s);
    throw e;
  }
  secretPage(p, res, s, a, clientId, secret, [say(s.locale, 'oldSecretEnded')]);
});
