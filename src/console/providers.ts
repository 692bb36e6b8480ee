import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import { PROVIDER_KINDS, ProviderInputError, ProviderNameError } from '../domain/social/providers';
import type { Application } from '../domain/storage/applications';
import type { ApplicationView } from '../usecases/operators/console-admin';
import { addProvider } from '../usecases/providers/add-provider';
import { removeProvider } from '../usecases/providers/remove-provider';
import { escape } from '../web/pages';
import { adminForm, appBase, inApp, q, say, type Signed } from './parts';

/**
 * An application's identity providers of the built-in social login (docs/console.md#applications):
 * listed on its page (never a secret), and for admins one added or removed.
 */

/** The providers section of an application's page. */
export const providersSection = (s: Signed, a: Application, providers: ApplicationView['providers']) => {
  const { locale } = s;
  const admin = roleMay(s.operator.role, 'administer');
  return `<section aria-labelledby="h-providers"><h2 id="h-providers">${escape(say(locale, 'providers'))}</h2>`
    + (providers.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<ul class="items">${providers.map((p) => `<li><p><code>${escape(p.name)}</code> (${escape(p.kind)}) <code>${escape(p.issuer)}</code></p>`
      + (admin ? adminForm(s, `${appBase(a)}/providers/remove`, say(locale, 'removeProvider', { name: p.name }), `<input type="hidden" name="name" value="${escape(p.name)}">`, true) : '')
      + '</li>').join('')}</ul>`)
    + (admin ? adminForm(s, `${appBase(a)}/providers`, say(locale, 'addProvider'),
      `<div class="row"><div><label for="p-name">${escape(say(locale, 'providerName'))}</label><input id="p-name" name="name" type="text" required maxlength="32"></div>`
      + `<div><label for="p-kind">${escape(say(locale, 'kind'))}</label><select id="p-kind" name="kind">${PROVIDER_KINDS.map((k) => `<option value="${k}">${k}</option>`).join('')}</select></div></div>`
      + `<label for="p-issuer">${escape(say(locale, 'issuer'))}</label><input id="p-issuer" name="issuer" type="url" required maxlength="2048">`
      + `<div class="row"><div><label for="p-client">client_id</label><input id="p-client" name="client_id" type="text" required maxlength="512" autocomplete="off"></div>`
      + `<div><label for="p-secret">client_secret</label><input id="p-secret" name="client_secret" type="password" required maxlength="2048" autocomplete="off"></div></div>`
      + `<label for="p-scopes">${escape(say(locale, 'scopes'))}</label><input id="p-scopes" name="scopes" type="text" maxlength="1000" placeholder="openid email profile">`) : '')
    + '</section>';
};

/** A provider added. */
export const createProvider = inApp(async ({ res, s, p, body }, a) => {
  const kind = PROVIDER_KINDS.find((k) => k === body.kind);
  if (!kind) throw invalidField('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
  try {
    await addProvider(p.services, {
      applicationId: a.id, acting: s.operator.acting,
      provider: { name: body.name ?? '', kind, issuer: body.issuer ?? '', clientId: body.client_id ?? '', clientSecret: body.client_secret ?? '', scopes: body.scopes?.split(/\s+/).filter(Boolean) },
    });
  } catch (e) {
    if (e instanceof ProviderInputError || e instanceof ProviderNameError) throw invalidField(e instanceof ProviderInputError ? e.field : 'name', e.message);
    throw e;
  }
  res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'providerAdded' })}#h-providers`);
});

/** A provider removed, confirmed. */
export const deleteProvider = inApp(async ({ res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  try {
    await removeProvider(p.services, { applicationId: a.id, acting: s.operator.acting, name: body.name ?? '' });
  } catch (e) {
    if (e instanceof ProviderNameError) throw invalidField('name', e.message);
    throw e;
  }
  res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'providerRemoved' })}#h-providers`);
});
