import express from 'express';
import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { listApplicationConnections } from '../usecases/organizations/connections';
import { addServiceProvider, listServiceProviders, removeServiceProvider } from '../usecases/saml/service-providers';
import { identityProviderOf } from '../usecases/saml/single-sign-on';
import { escape } from '../web/pages';
import type { ConsoleParts } from './webhooks';

type Signed = Parameters<ConsoleParts['adminForm']>[0];

/**
 * The console's SAML service providers (docs/console.md#saml, docs/saml.md): an application's on
 * its page with the identity provider's metadata URL, and, for admins, registering one from its
 * metadata and removing one. Each is the use case the API and the CLI run.
 */
export async function samlSection(p: ConsoleParts, s: Signed, a: Application): Promise<string> {
  const { locale } = s;
  const providers = await listServiceProviders(p.services, { app: a });
  const base = `${p.appBase(a)}/saml`;
  const admin = roleMay(s.operator.role, 'administer');
  const metadataUrl = identityProviderOf(p.services, a).entityId;
  return `<section aria-labelledby="h-saml"><h2 id="h-saml">${escape(p.say(locale, 'samlServiceProviders'))}</h2>`
    + `<p>${escape(p.say(locale, 'samlIdpMetadata'))} <code>${escape(metadataUrl)}</code></p>`
    + (providers.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['samlName', 'samlAcs', 'samlNameIdFormat', 'samlSignedRequests', ''].map((k) => `<th scope="col">${k ? escape(p.say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
        + providers.map((sp) => `<tr><td>${escape(sp.name)}<br><code title="${escape(sp.id)}">${escape(sp.entityId)}</code></td>`
          + `<td>${sp.assertionConsumers.map((u) => `<code>${escape(u)}</code>`).join('<br>')}</td>`
          + `<td>${escape(sp.nameIdFormat ?? p.say(locale, 'samlNameIdDefault'))}</td><td>${escape(p.say(locale, sp.authnRequestsSigned ? 'yes' : 'no'))}</td>`
          + `<td>${admin ? p.adminForm(s, `${base}/${encodeURIComponent(sp.id)}/remove`, p.say(locale, 'samlRemove'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? p.adminForm(s, base, p.say(locale, 'addServiceProvider'),
      `<label for="sp-metadata">${escape(p.say(locale, 'samlMetadata'))}</label><textarea id="sp-metadata" name="metadata" rows="6" required spellcheck="false" aria-describedby="sp-metadata-tip"></textarea>`
      + `<p class="tip" id="sp-metadata-tip">${escape(p.say(locale, 'samlMetadataTip'))}</p>`
      + `<label for="sp-name">${escape(p.say(locale, 'samlName'))}</label><input id="sp-name" name="name" type="text" maxlength="200">`
      + `<label for="sp-format">${escape(p.say(locale, 'samlNameIdFormat'))}</label><select id="sp-format" name="name_id_format">`
      + `<option value="">${escape(p.say(locale, 'samlNameIdDefault'))}</option><option value="persistent">persistent</option><option value="email">email</option></select>`) : '')
    + '</section>';
}

/** The application's enterprise connections, every organization's (docs/organizations.md#connections): read here; made with the API or the command line. */
export async function connectionsSection(p: ConsoleParts, s: Signed, a: Application): Promise<string> {
  const { locale } = s;
  const connections = await listApplicationConnections(p.services, { app: a });
  return `<section aria-labelledby="h-connections"><h2 id="h-connections">${escape(p.say(locale, 'connections'))}</h2>`
    + (connections.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['samlName', 'connectionOrganization', 'connectionType', 'connectionIdp', 'connectionRequired'].map((k) => `<th scope="col">${escape(p.say(locale, k))}</th>`).join('')}</tr></thead><tbody>`
        + connections.map((c) => `<tr><td><span title="${escape(c.id)}">${escape(c.name)}</span></td><td><code>${escape(c.organizationId)}</code></td><td>${escape(c.type === 'saml' ? 'SAML' : 'OpenID')}</td>`
          + `<td><code>${escape(c.idpEntityId ?? c.issuer ?? '')}</code></td><td>${escape(p.say(locale, c.required ? 'yes' : 'no'))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + `<p class="tip">${escape(p.say(locale, 'connectionsTip'))}</p></section>`;
}

/** Registering and removing service providers. */
export function mountSaml(app: express.Express, p: ConsoleParts): void {
  // metadata of a service provider with a few certificates and endpoints
  const form = express.urlencoded({ extended: false, limit: '300kb', parameterLimit: 10 });
  const back = (a: Application, locale: string) => `${p.appBase(a)}${p.q({ locale })}#h-saml`;

  app.post('/apps/:app/saml', form, p.administer(async (_req, res, s, a, body) => {
    await addServiceProvider(p.services, {
      app: a, acting: s.operator.acting, metadata: body.metadata ?? '', ...(body.name && { name: body.name }), ...(body.name_id_format && { nameIdFormat: body.name_id_format }),
    });
    res.redirect(303, back(a, s.locale));
  }));

  app.post('/apps/:app/saml/:id/remove', form, p.administer(async (req, res, s, a, body) => {
    if (body.confirm !== 'yes') throw invalidField('confirm', p.say(s.locale, 'notConfirmed'));
    await removeServiceProvider(p.services, { app: a, acting: s.operator.acting, id: String(req.params.id) });
    res.redirect(303, back(a, s.locale));
  }));
}
