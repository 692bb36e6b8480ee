import express from 'express';
import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import { SCIM_PATH } from '../domain/scim/schemas';
import type { Application } from '../domain/storage/applications';
import { applicationProvisioning, createScimToken, revokeScimToken } from '../usecases/scim/tokens';
import { escape } from '../web/pages';
import type { ConsoleParts } from './webhooks';

type Signed = Parameters<ConsoleParts['adminForm']>[0];

/** The latest provisioning calls the page shows. */
const CALLS = 20;

/**
 * The console's SCIM provisioning (docs/console.md#what-every-page-does, docs/scim.md): every organization's
 * tokens (never a token) and the directories' latest calls that changed something, on the
 * application's page; for admins, a token made (shown once) and one revoked. Each is the use case
 * the API and the CLI run.
 */
export async function scimSection(p: ConsoleParts, s: Signed, a: Application): Promise<string> {
  const { locale } = s;
  const { tokens, calls } = await applicationProvisioning(p.services, { app: a, calls: CALLS });
  const admin = roleMay(s.operator.role, 'administer');
  const base = `${p.appBase(a)}/scim`;
  const head = (keys: string[]) => `<thead><tr>${keys.map((k) => `<th scope="col">${k ? escape(p.say(locale, k)) : ''}</th>`).join('')}</tr></thead>`;
  const described = (data: Record<string, unknown>) => Object.entries(data).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`).join('; ');
  return `<section aria-labelledby="h-scim"><h2 id="h-scim">${escape(p.say(locale, 'scimProvisioning'))}</h2>`
    + `<p>${escape(p.say(locale, 'scimAddress'))} <code>${escape(`${p.services.baseUrls.of(a.name)}${SCIM_PATH}`)}</code></p>`
    + `<h3>${escape(p.say(locale, 'scimTokens'))}</h3>`
    + (tokens.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
      : `<div class="scroll"><table>${head(['connectionOrganization', 'scimDescription', 'created', 'scimLastUsed', 'state', ''])}<tbody>`
        + tokens.map((t) => `<tr><td><code>${escape(t.organizationId)}</code></td><td><span title="${escape(t.id)}">${escape(t.description)}</span></td>`
          + `<td>${escape(p.time(t.createdAt))}<br><small>${escape(t.createdBy)}</small></td><td>${escape(t.lastUsedAt ? p.time(t.lastUsedAt) : p.say(locale, 'scimNeverUsed'))}</td>`
          + `<td>${escape(t.revokedAt ? p.say(locale, 'scimRevokedAt', { at: p.time(t.revokedAt) }) : p.say(locale, 'scimLive'))}</td>`
          + `<td>${admin && !t.revokedAt ? p.adminForm(s, `${base}/${encodeURIComponent(t.organizationId)}/${encodeURIComponent(t.id)}/revoke`, p.say(locale, 'scimRevoke'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + `<h3>${escape(p.say(locale, 'scimCalls'))}</h3>`
    + (calls.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
      : `<div class="scroll"><table>${head(['scimWhen', 'scimWhat', 'scimToken', 'scimDetails'])}<tbody>`
        + calls.map((c) => `<tr><td>${escape(p.time(c.occurredAt))}</td><td>${escape(c.type)}</td><td><code>${escape(c.actor.kind === 'scim' ? c.actor.tokenId : '')}</code></td>`
          + `<td>${escape(described(c.data))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? p.adminForm(s, base, p.say(locale, 'scimNewToken'),
      `<label for="scim-org">${escape(p.say(locale, 'connectionOrganization'))}</label><input id="scim-org" name="organization_id" type="text" required pattern="org_[0-9a-f]{24}" spellcheck="false" aria-describedby="scim-org-tip">`
      + `<p class="tip" id="scim-org-tip">${escape(p.say(locale, 'scimOrganizationTip'))}</p>`
      + `<label for="scim-description">${escape(p.say(locale, 'scimDescription'))}</label><input id="scim-description" name="description" type="text" maxlength="200" value="SCIM">`) : '')
    + `<p class="tip">${escape(p.say(locale, 'scimTip'))}</p></section>`;
}

/** Making and revoking tokens. */
export function mountScim(app: express.Express, p: ConsoleParts): void {
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });
  const back = (a: Application, locale: string) => `${p.appBase(a)}${p.q({ locale })}#h-scim`;

  app.post('/apps/:app/scim', form, p.administer(async (_req, res, s, a, body) => {
    const made = await createScimToken(p.services, { app: a, acting: s.operator.acting, organizationId: body.organization_id ?? '', description: body.description || 'SCIM' });
    p.page(res, 200, s.locale, p.say(s.locale, 'scimTokenTitle'), `<p class="notice done" role="status">${escape(p.say(s.locale, 'secretOnce'))}</p>`
      + `<div class="scroll"><table><tbody><tr><th scope="row">${escape(p.say(s.locale, 'connectionOrganization'))}</th><td><code>${escape(made.view.organizationId)}</code></td></tr>`
      + `<tr><th scope="row">${escape(p.say(s.locale, 'scimAddress'))}</th><td><code>${escape(`${p.services.baseUrls.of(a.name)}${SCIM_PATH}`)}</code></td></tr>`
      + `<tr><th scope="row">${escape(p.say(s.locale, 'scimToken'))}</th><td><code id="secret">${escape(made.token)}</code></td></tr></tbody></table></div>`
      + `<p><a href="${escape(back(a, s.locale))}">${escape(p.say(s.locale, 'scimBack'))}</a></p>`, s);
  }));

  app.post('/apps/:app/scim/:org/:token/revoke', form, p.administer(async (req, res, s, a, body) => {
    if (body.confirm !== 'yes') throw invalidField('confirm', p.say(s.locale, 'notConfirmed'));
    await revokeScimToken(p.services, { app: a, acting: s.operator.acting, organizationId: String(req.params.org), tokenId: String(req.params.token) });
    res.redirect(303, back(a, s.locale));
  }));
}
