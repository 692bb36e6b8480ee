import { escape, type PageLocale } from '../web/pages';
import { changeOneSetting } from '../usecases/operators/console-admin';
import type { Application } from '../domain/storage/applications';
import { adminForm, appBase, inApp, q, say, type Signed } from './parts';

/**
 * Settings of an application and of a client (docs/console.md#applications): the table of them,
 * and for admins one set (or removed, left empty) with the use case /settings/set runs.
 */

/** The settings as a table of keys and values. */
export const settingsTable = (settings: Record<string, string>, locale: PageLocale) => (Object.keys(settings).length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
  : `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(locale, 'key'))}</th><th scope="col">${escape(say(locale, 'value'))}</th></tr></thead><tbody>`
    + Object.entries(settings).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `<tr><td><code>${escape(k)}</code></td><td><code>${escape(v)}</code></td></tr>`).join('') + '</tbody></table></div>');

/** The form that sets one setting of the application, or of its client `client`. */
export const settingForm = (s: Signed, a: Application, client?: string) => adminForm(s, `${appBase(a)}/settings`, say(s.locale, 'setSetting'),
  (client ? `<input type="hidden" name="client" value="${escape(client)}">` : '')
  + `<div class="row"><div><label for="key">${escape(say(s.locale, 'key'))}</label><input id="key" name="key" type="text" required maxlength="64"></div>`
  + `<div><label for="value">${escape(say(s.locale, 'value'))}</label><input id="value" name="value" type="text" maxlength="4000" aria-describedby="value-tip"></div></div>`
  + `<p class="tip" id="value-tip">${escape(say(s.locale, 'settingTip'))}</p>`);

/** One setting changed: back to the page it was changed on. */
export const changeSetting = inApp(async ({ res, s, p, body }, a) => {
  const client = body.client || undefined;
  await changeOneSetting(p.services, { app: a, ...(client && { clientId: client }), key: (body.key ?? '').trim(), value: body.value ?? '', acting: s.operator.acting });
  res.redirect(303, `${client ? `${appBase(a)}/clients/${encodeURIComponent(client)}` : appBase(a)}${q({ locale: s.locale, done: 'settingChanged' })}`);
});
