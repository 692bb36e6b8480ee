import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import { SCIM_PATH } from '../domain/scim/schemas';
import type { Application } from '../domain/storage/applications';
import { applicationProvisioning, createScimToken, revokeScimToken } from '../usecases/scim/tokens';
import { escape } from '../web/pages';
import { adminForm, appBase, inApp, q, say, time, type PageCall } from './parts';

/** The latest provisioning calls the page shows. */
const CALLS = 20;

/**
 * The console's SCIM provisioning (docs/console.md#scim-provisioning, docs/scim.md): every organization's
 * tokens (never a token) and the directories' latest calls that changed something, on the
 * application's page; for admins, a token made (shown once) and one revoked. Each is the use case
 * the API and the CLI run.
 */
export async function scimSection({ s, p }: Pick<PageCall, 's' | 'p'>, a: Application): Promise<string> {
  const { locale } = s;
  const { tokens, calls } = await applicationProvisioning(p.services, { app: a, calls: CALLS });
  const admin = roleMay(s.operator.role, 'administer');
  const base = `${appBase(a)}/scim`;
  const head = (keys: string[]) => `<thead><tr>${keys.map((k) => `<th scope="col">${k ? escape(say(locale, k)) : ''}</th>`).join('')}</tr></thead>`;
  const described = (data: Record<string, unknown>) => Object.entries(data).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`).join('; ');
  return `<section aria-labelledby="h-scim"><h2 id="h-scim">${escape(say(locale, 'scimProvisioning'))}</h2>`
    + `<p>${escape(say(locale, 'scimAddress'))} <code>${escape(`${p.services.baseUrls.of(a.name)}${SCIM_PATH}`)}</code></p>`
    + `<h3>${escape(say(locale, 'scimTokens'))}</h3>`
    + (tokens.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table>${head(['connectionOrganization', 'scimDescription', 'created', 'scimLastUsed', 'state', ''])}<tbody>`
        + tokens.map((t) => `<tr><td><code>${escape(t.organizationId)}</code></td><td><span title="${escape(t.id)}">${escape(t.description)}</span></td>`
          + `<td>${escape(time(t.createdAt))}<br><small>${escape(t.createdBy)}</small></td><td>${escape(t.lastUsedAt ? time(t.lastUsedAt) : say(locale, 'scimNeverUsed'))}</td>`
          + `<td>${escape(t.revokedAt ? say(locale, 'scimRevokedAt', { at: time(t.revokedAt) }) : say(locale, 'scimLive'))}</td>`
          + `<td>${admin && !t.revokedAt ? adminForm(s, `${base}/${encodeURIComponent(t.organizationId)}/${encodeURIComponent(t.id)}/revoke`, say(locale, 'scimRevoke'), '', true) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + `<h3>${escape(say(locale, 'scimCalls'))}</h3>`
    + (calls.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table>${head(['scimWhen', 'scimWhat', 'scimToken', 'scimDetails'])}<tbody>`
        + calls.map((c) => `<tr><td>${escape(time(c.occurredAt))}</td><td>${escape(c.type)}</td><td><code>${escape(c.actor.kind === 'scim' ? c.actor.tokenId : '')}</code></td>`
          + `<td>${escape(described(c.data))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (admin ? adminForm(s, base, say(locale, 'scimNewToken'),
      `<label for="scim-org">${escape(say(locale, 'connectionOrganization'))}</label><input id="scim-org" name="organization_id" type="text" required pattern="org_[0-9a-f]{24}" spellcheck="false" aria-describedby="scim-org-tip">`
      + `<p class="tip" id="scim-org-tip">${escape(say(locale, 'scimOrganizationTip'))}</p>`
      + `<label for="scim-description">${escape(say(locale, 'scimDescription'))}</label><input id="scim-description" name="description" type="text" maxlength="200" value="SCIM">`) : '')
    + `<p class="tip">${escape(say(locale, 'scimTip'))}</p></section>`;
}

/** Where a change leads: the application's page, at its SCIM provisioning. */
const back = (a: Application, locale: string) => `${appBase(a)}${q({ locale })}#h-scim`;

/** A token made for an organization's directory: shown once. */
export const createToken = inApp(async ({ res, s, p, body }, a) => {
  const made = await createScimToken(p.services, { app: a, acting: s.operator.acting, organizationId: body.organization_id ?? '', description: body.description || 'SCIM' });
  p.page(res, 200, s.locale, say(s.locale, 'scimTokenTitle'), `<p class="notice done" role="status">${escape(say(s.locale, 'secretOnce'))}</p>`
    + `<div class="scroll"><table><tbody><tr><th scope="row">${escape(say(s.locale, 'connectionOrganization'))}</th><td><code>${escape(made.view.organizationId)}</code></td></tr>`
    + `<tr><th scope="row">${escape(say(s.locale, 'scimAddress'))}</th><td><code>${escape(`${p.services.baseUrls.of(a.name)}${SCIM_PATH}`)}</code></td></tr>`
    + `<tr><th scope="row">${escape(say(s.locale, 'scimToken'))}</th><td><code id="secret">${escape(made.token)}</code></td></tr></tbody></table></div>`
    + `<p><a href="${escape(back(a, s.locale))}">${escape(say(s.locale, 'scimBack'))}</a></p>`, s);
});

/** A token revoked, confirmed: the directory's next call is refused. */
export const revokeToken = inApp(async ({ req, res, s, p, body }, a) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  await revokeScimToken(p.services, { app: a, acting: s.operator.acting, organizationId: String(req.params.org), tokenId: String(req.params.token) });
  res.redirect(303, back(a, s.locale));
});
