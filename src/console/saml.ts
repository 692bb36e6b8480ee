import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { listApplicationConnections } from '../usecases/organizations/connections';
import { addServiceProvider, listServiceProviders, removeServiceProvider } from '../usecases/saml/service-providers';
import { identityProviderOf } from '../usecases/saml/single-sign-on';
import { escape } from '../web/pages';
import { adminForm, appBase, inApp, q, say, type PageCall } from './parts';

/**
 * The console's SAML service providers (docs/console.md#saml-service-providers, docs/saml.md): an application's on
 * its page with the identity provider's metadata URL, and, for admins, registering one from its
 * metadata and removing one. Each is the use case the API and the CLI run.
 */
export async function samlSection({ s, p }: Pick<PageCall, 's' | 'p'>, a: Application): Promise<string> {
  const { locale } = s;
  const providers = await listServiceProviders(p.services, { app: a });
  const base = `${appBase(a)}/saml`;
  const admin = roleMay(s.operator.role, 'administer');
  const metadataUrl = identityProviderOf(p.services, a).entityId;
  return `<section aria-labelledby="h-saml"><h2 id="h-saml">${escape(say(locale, 'samlServiceProviders'))}</h2>`
    + `<p>${escape(say(locale, 'samlIdpMetadata'))} <code>${escape(metadataUrl)}</code></p>`
    + (providers.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['samlName', 'samlAcs', 'samlNameIdFormat', 'samlSignedRequests', ''].map((k) => `<th scope="col">${k ? escape(say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
        + providers.map((sp) => `<tr><td>${escape(sp.name)}<br><code title="${escape(sp.id)}">${escape(sp.entityId)}</code></td>`
          + `<td>${sp.assertionConsumers.map((u) => `<code>${escape(u)}</code>`).join('<br>')}</td>`
          + `<td>${escape(sp.nameIdFormat ?? say(locale, 'samlNameIdDefault'))}</td><td>${escape(say(locale, sp.authnRequestsSigned ? 'yes' : 'no'))}</td>`
          + `<td>${admin ? adminForm(s, `${base}/${encodeURIComponent(sp.id)}/remove`, say(locale, 'samlRemove'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? adminForm(s, base, say(locale, 'addServiceProvider'),
      `<label for="sp-metadata">${escape(say(locale, 'samlMetadata'))}</label><textarea id="sp-metadata" name="metadata" rows="6" required spellcheck="false" aria-describedby="sp-metadata-tip"></textarea>`
      + `<p class="tip" id="sp-metadata-tip">${escape(say(locale, 'samlMetadataTip'))}</p>`
      + `<label for="sp-name">${escape(say(locale, 'samlName'))}</label><input id="sp-name" name="name" type="text" maxlength="200">`
      + `<label for="sp-format">${escape(say(locale, 'samlNameIdFormat'))}</label><select id="sp-format" name="name_id_format">`
      + `<option value="">${escape(say(locale, 'samlNameIdDefault'))}</option><option value="persistent">persistent</option><option value="email">email</option></select>`) : '')
    + '</section>';
}

/** The application's enterprise connections, every organization's (docs/organizations.md#connections): read here; made with the API or the command line. */
export async function connectionsSection({ s, p }: Pick<PageCall, 's' | 'p'>, a: Application): Promise<string> {
  const { locale } = s;
  const connections = await listApplicationConnections(p.services, { app: a });
  return `<section aria-labelledby="h-connections"><h2 id="h-connections">${escape(say(locale, 'connections'))}</h2>`
    + (connections.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['samlName', 'connectionOrganization', 'connectionType', 'connectionIdp', 'connectionRequired'].map((k) => `<th scope="col">${escape(say(locale, k))}</th>`).join('')}</tr></thead><tbody>`
        + connections.map((c) => `<tr><td><span title="${escape(c.id)}">${escape(c.name)}</span></td><td><code>${escape(c.organizationId)}</code></td><td>${escape(c.type === 'saml' ? 'SAML' : 'OpenID')}</td>`
          + `<td><code>${escape(c.idpEntityId ?? c.issuer ?? '')}</code></td><td>${escape(say(locale, c.required ? 'yes' : 'no'))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + `<p class="tip">${escape(say(locale, 'connectionsTip'))}</p></section>`;
}

/** Where a change leads: the application's page, at its SAML service providers. */
const back = (a: Application, locale: string) => `${appBase(a)}${q({ locale })}#h-saml`;

/** A service provider registered from its metadata. */
export const createServiceProvider = inApp(async ({ res, s, p, body }, a) => {
  await addServiceProvider(p.services, {
    app: a, acting: s.operator.acting, metadata: body.metadata ?? '', ...(body.name && { name: body.name }), ...(body.name_id_format && { nameIdFormat: body.name_id_format }),
  });
  res.redirect(303, back(a, s.locale));
});

/** A service provider removed, confirmed. */
export const deleteServiceProvider = inApp(async ({ req, res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  await removeServiceProvider(p.services, { app: a, acting: s.operator.acting, id: String(req.params.id) });
  res.redirect(303, back(a, s.locale));
});
