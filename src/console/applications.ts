import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import { rotateSigningKeys } from '../usecases/keys/signing-keys';
import { applicationView } from '../usecases/operators/console-admin';
import { consoleApplications } from '../usecases/operators/console-reads';
import { escape } from '../web/pages';
import { clientsSection } from './clients';
import { apisSection } from './apis';
import { flowsSection } from './flows';
import { ADMIN_DONE, adminForm, appBase, doneNotice, inApp, q, say, time, type PageHandler } from './parts';
import { providersSection } from './providers';
import { connectionsSection, samlSection } from './saml';
import { scimSection } from './scim';
import { settingForm, settingsTable } from './settings';
import { webhooksSection } from './webhooks';

/**
 * The applications (docs/console.md#applications): the list, and an application's page with its
 * settings, clients, identity providers, flows, signing keys, APIs and roles, webhooks, SAML service providers,
 * enterprise connections and SCIM provisioning, each section from the module of its own; changes
 * for admins.
 */

/** Every application with its address; the operators' one marked. */
export const applicationsPage: PageHandler = async ({ res, s, p }) => {
  const apps = await consoleApplications(p.services);
  const rows = apps.map((a) => `<tr><td><a href="${escape(`${appBase(a)}${q({ locale: s.locale })}`)}">${escape(a.name)}</a></td><td><code>${escape(p.services.baseUrls.of(a.name))}</code></td>`
    + `<td>${a.id === s.operatorsApp.id ? escape(say(s.locale, 'operatorsApp')) : ''}</td></tr>`);
  p.page(res, 200, s.locale, say(s.locale, 'applications'), `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(s.locale, 'application'))}</th>`
    + `<th scope="col">${escape(say(s.locale, 'baseUrl'))}</th><th scope="col"></th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`, s);
};

/** An application's page. */
export const showApplication = inApp(async (call, a) => {
  const { req, res, s, p } = call;
  const view = await applicationView(p.services, { app: a });
  const { locale } = s;
  const admin = roleMay(s.operator.role, 'administer');
  let body = doneNotice(locale, ADMIN_DONE.find((d) => d === req.query.done))
    + `<p><code>${escape(view.baseUrl)}</code> · <a href="/${q({ app: a.name, locale })}">${escape(say(locale, 'overview'))}</a> · <a href="/accounts${q({ app: a.name, locale })}">${escape(say(locale, 'accounts'))}</a> · <a href="${escape(`${appBase(a)}/organizations${q({ locale })}`)}">${escape(say(locale, 'organizations'))}</a> · <a href="/audit${q({ app: a.name, locale })}">${escape(say(locale, 'audit'))}</a></p>`;
  body += `<section aria-labelledby="h-settings"><h2 id="h-settings">${escape(say(locale, 'settings'))}</h2>${settingsTable(a.settings, locale)}${admin ? settingForm(s, a) : ''}</section>`;
  body += clientsSection(s, a, view.clients);
  body += providersSection(s, a, view.providers);
  body += flowsSection(s, a, view.flows);
  body += `<section aria-labelledby="h-keys"><h2 id="h-keys">${escape(say(locale, 'keys'))}</h2>`
    + (view.keys.length === 0 ? `<p>${escape(say(locale, 'noKeys'))}</p>`
      : `<div class="scroll"><table><thead><tr><th scope="col">kid</th><th scope="col">alg</th><th scope="col">${escape(say(locale, 'state'))}</th><th scope="col">${escape(say(locale, 'created'))}</th></tr></thead><tbody>`
        + view.keys.map((k) => `<tr><td><code>${escape(k.kid)}</code></td><td>${escape(k.alg)}</td><td>${escape(k.slot ?? say(locale, 'retired', { at: time(k.retiredAt) }))}</td><td>${escape(time(k.createdAt))}</td></tr>`).join('')
        + '</tbody></table></div>'
        + (admin ? adminForm(s, `${appBase(a)}/keys`, say(locale, 'rotateKeys'), `<p class="tip">${escape(say(locale, 'rotateTip'))}</p>`, true) : ''))
    + '</section>';
  body += await apisSection(call, a, view.clients);
  body += await webhooksSection(call, a);
  body += await samlSection(call, a);
  body += await connectionsSection(call, a);
  body += await scimSection(call, a);
  p.page(res, 200, locale, a.name, body, s);
});

/** The signing keys rotated, confirmed (an OpenID provider application's). */
export const rotateKeys = inApp(async ({ res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  await rotateSigningKeys(p.services, { applicationId: a.id, applicationName: a.name, acting: s.operator.acting });
  res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'keysRotated' })}#h-keys`);
});
