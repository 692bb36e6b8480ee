import type { Request } from 'express';
import { roleMay } from '../domain/operators';
import { invalidField, Refusal } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import type { StoredOrganization } from '../domain/storage/organizations';
import { consoleRecordByAddress } from '../usecases/operators/console-reads';
import { listConnections } from '../usecases/organizations/connections';
import { listDomains } from '../usecases/organizations/domains';
import { createInvitation, listInvitations, resendInvitation, revokeInvitation, standingOf } from '../usecases/organizations/invitations';
import { addMember, listMembers, removeMember, setMemberRoles } from '../usecases/organizations/members';
import { getOrganization, searchOrganizations } from '../usecases/organizations/organizations';
import { listScimTokens } from '../usecases/scim/tokens';
import { escape } from '../web/pages';
import { adminForm, inApp, q, say, time, type PageCall, type Signed } from './parts';

/**
 * The console's organizations (docs/console.md#organizations): an application's organizations,
 * searched; an organization's page with its members and their roles, its invitations, its domains
 * and whether accounts join by them, its enterprise connections and its SCIM tokens. Support and
 * admins add a member, change roles, remove one, invite, resend or revoke an invitation; viewers
 * read. Each is the use case the API and the CLI run, with the operator as actor.
 */

const PAGE = 50;
const DONE = ['memberAdded', 'rolesChanged', 'memberRemoved', 'invited', 'invitationResent', 'invitationRevoked'] as const;

/** Roles as typed: words separated by commas or spaces. */
const rolesOf = (text: string | undefined) => (text ?? '').split(/[\s,]+/).filter(Boolean);

const base = (a: Application) => `/apps/${encodeURIComponent(a.name)}/organizations`;
const orgUrl = (a: Application, o: { organizationId: string }, locale: string, done?: string) => `${base(a)}/${encodeURIComponent(o.organizationId)}${q({ locale, done })}`;

/** An application's organizations, found by name or slug. */
export const organizationsPage = inApp(async ({ req, res, s, p }, a) => {
  const { locale } = s;
  const t = (k: string, v?: Record<string, string>) => escape(say(locale, k, v));
  const text = typeof req.query.q === 'string' ? req.query.q.slice(0, 200) : '';
  const found = await searchOrganizations(p.services, { app: a, text, limit: PAGE });
  p.page(res, 200, locale, say(locale, 'organizationsOf', { app: a.name }),
    `<form method="get" action="${escape(base(a))}" role="search"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row">`
    + `<div><label for="q">${t('organizationSearch')}</label><input id="q" name="q" type="search" value="${escape(text)}" aria-describedby="q-tip"></div>`
    + `<div><button type="submit">${t('find')}</button></div></div><p class="tip" id="q-tip">${t('organizationSearchTip')}</p></form>`
    + (found.length === 0 ? `<p class="notice" role="status">${t('noneFound')}</p>`
      : `<div class="scroll"><table><thead><tr><th scope="col">${t('name')}</th><th scope="col">slug</th><th scope="col">${t('organizationJoinByDomain')}</th><th scope="col">${t('created')}</th></tr></thead><tbody>`
        + found.map((o) => `<tr><td><a href="${escape(orgUrl(a, o, locale))}" title="${escape(o.organizationId)}">${escape(o.name)}</a></td><td><code>${escape(o.slug)}</code></td>`
          + `<td>${t(o.joinByDomain ? 'yes' : 'no')}</td><td>${escape(time(o.createdAt))}</td></tr>`).join('') + '</tbody></table></div>')
    + (found.length === PAGE ? `<p class="tip">${t('organizationsFirst', { count: String(PAGE) })}</p>` : ''), s);
});

/** The organization a path names; a page saying so otherwise. */
const organizationOf = async ({ req, res, s, p }: PageCall, a: Application): Promise<StoredOrganization | undefined> => {
  try {
    return await getOrganization(p.services, { app: a, organizationId: String(req.params.org) });
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    p.problem(res, 404, s.locale, say(s.locale, 'noSuchOrganization'), s);
    return undefined;
  }
};

/** An organization's page: its members, invitations, domains, connections and SCIM tokens. */
export const showOrganization = inApp(async (call, a) => {
  const { req, res, s, p } = call;
  const o = await organizationOf(call, a);
  if (!o) return;
  const { locale } = s;
  const t = (k: string, v?: Record<string, string>) => escape(say(locale, k, v));
  const acting = s.operator.acting;
  const command = { app: a, acting, organizationId: o.organizationId };
  const [members, invitations, domains, connections, tokens] = await Promise.all([
    listMembers(p.services, { ...command, after: null, limit: 200 }),
    listInvitations(p.services, { ...command, after: null, limit: 100 }),
    listDomains(p.services, command),
    listConnections(p.services, command),
    listScimTokens(p.services, command),
  ]);
  const acts = roleMay(s.operator.role, 'account');
  const now = p.services.clock.now();
  const path = `${base(a)}/${encodeURIComponent(o.organizationId)}`;
  const done = DONE.find((d) => d === req.query.done);
  const head = (keys: string[]) => `<thead><tr>${keys.map((k) => `<th scope="col">${k ? t(k) : ''}</th>`).join('')}</tr></thead>`;
  const table = (keys: string[], rows: string[]) => (rows.length === 0 ? `<p>${t('none')}</p>` : `<div class="scroll"><table>${head(keys)}<tbody>${rows.join('')}</tbody></table></div>`);
  let body = (done ? `<p class="notice done" role="status">${t(`done_${done}`)}</p>` : '')
    + `<p class="links"><a href="${escape(`${base(a)}${q({ locale })}`)}">${t('backToOrganizations', { app: a.name })}</a></p>`
    + `<div class="tiles summary"><div class="tile"><span>${t('organizationId')}</span><p><code>${escape(o.organizationId)}</code></p></div>`
    + `<div class="tile"><span>slug</span><p><code>${escape(o.slug)}</code></p></div>`
    + `<div class="tile"><span>${t('organizationMembers')}</span><p>${escape(String(members.items.length))}${members.next ? '+' : ''}</p></div>`
    + `<div class="tile"><span>${t('organizationDefaultRoles')}</span><p>${escape(o.defaultRoles.join(', ') || say(locale, 'none'))}</p></div></div>`;
  // members
  body += `<section aria-labelledby="h-members"><h2 id="h-members">${t('organizationMembers')}</h2>`
    + table(['email', 'organizationRoles', 'organizationJoined', ''], members.items.map((m) => `<tr><td><a href="${escape(`/apps/${encodeURIComponent(a.name)}/accounts/${m.entityId}${q({ locale })}`)}">${escape(m.email ?? m.username ?? m.uuid)}</a></td>`
      + `<td>${acts ? adminForm(s, `${path}/members/${m.entityId}/roles`, say(locale, 'saveRoles'), `<label for="roles-${m.entityId}" class="visually-hidden">${t('organizationRoles')}</label><input id="roles-${m.entityId}" name="roles" type="text" value="${escape(m.roles.join(', '))}" maxlength="500">`) : escape(m.roles.join(', '))}</td>`
      + `<td>${escape(time(m.createdAt))}<br><small>${escape(m.joinedBy)}</small></td>`
      + `<td>${acts ? adminForm(s, `${path}/members/${m.entityId}/remove`, say(locale, 'removeMember'), '', true) : ''}</td></tr>`))
    + (members.next ? `<p class="tip">${t('organizationsFirst', { count: String(members.items.length) })}</p>` : '')
    + (acts ? adminForm(s, `${path}/members`, say(locale, 'addMember'),
      `<div class="row"><div><label for="m-email">${t('email')}</label><input id="m-email" name="email" type="email" required maxlength="254"></div>`
      + `<div><label for="m-roles">${t('organizationRoles')}</label><input id="m-roles" name="roles" type="text" maxlength="500" placeholder="${escape(o.defaultRoles.join(', '))}"></div></div>`
      + `<p class="tip">${t('addMemberTip')}</p>`) : '')
    + '</section>';
  // invitations
  body += `<section aria-labelledby="h-invitations"><h2 id="h-invitations">${t('organizationInvitations')}</h2>`
    + table(['email', 'organizationRoles', 'state', 'organizationExpires', ''], invitations.items.map((i) => {
      const standing = standingOf(i, now);
      return `<tr><td>${escape(i.email)}</td><td>${escape(i.roles.join(', '))}</td><td>${t(`invitation_${standing}`)}</td><td>${escape(time(i.expiresAt))}</td>`
        + `<td>${acts && standing === 'pending' ? adminForm(s, `${path}/invitations/${encodeURIComponent(i.invitationId)}/resend`, say(locale, 'resendInvitation'), '')
          + adminForm(s, `${path}/invitations/${encodeURIComponent(i.invitationId)}/revoke`, say(locale, 'revokeInvitation'), '', true) : ''}</td></tr>`;
    }))
    + (acts ? adminForm(s, `${path}/invitations`, say(locale, 'invite'),
      `<div class="row"><div><label for="i-email">${t('email')}</label><input id="i-email" name="email" type="email" required maxlength="254"></div>`
      + `<div><label for="i-roles">${t('organizationRoles')}</label><input id="i-roles" name="roles" type="text" maxlength="500" placeholder="${escape(o.defaultRoles.join(', '))}"></div></div>`) : '')
    + '</section>';
  // domains, connections and SCIM tokens
  body += '<div class="columns">'
    + `<section aria-labelledby="h-domains"><h2 id="h-domains">${t('organizationDomains')}</h2>`
    + table(['organizationDomain', 'state', 'organizationJoinable'], domains.map((d) => `<tr><td><code>${escape(d.domain)}</code></td>`
      + `<td>${escape(d.verifiedAt ? say(locale, 'domainVerified', { at: time(d.verifiedAt), by: d.verifiedBy ?? '' }) : say(locale, 'domainUnverified'))}</td>`
      + `<td>${escape(d.joinableAt && o.joinByDomain ? say(locale, 'yes') : say(locale, 'no'))}</td></tr>`))
    + '</section>'
    + `<section aria-labelledby="h-org-connections"><h2 id="h-org-connections">${t('connections')}</h2>`
    + table(['name', 'kind', 'connectionRequired'], connections.map((c) => `<tr><td title="${escape(c.id)}">${escape(c.name)}</td><td>${escape(c.type === 'saml' ? 'SAML' : 'OpenID')}</td><td>${t(c.required ? 'yes' : 'no')}</td></tr>`))
    + `<h3>${t('scimTokens')}</h3>`
    + table(['scimDescription', 'scimLastUsed', 'state'], tokens.map((k) => `<tr><td title="${escape(k.id)}">${escape(k.description)}</td>`
      + `<td>${escape(k.lastUsedAt ? time(k.lastUsedAt) : say(locale, 'scimNeverUsed'))}</td><td>${escape(k.revokedAt ? say(locale, 'scimRevokedAt', { at: time(k.revokedAt) }) : say(locale, 'scimLive'))}</td></tr>`))
    + `<p class="tip">${t('organizationTokensTip')}</p></section></div>`;
  p.page(res, 200, locale, o.name, body, s);
});

/** A change of the organization's members or invitations: back to its page saying what was done. */
const change = (work: (call: PageCall, a: Application, o: StoredOrganization) => Promise<(typeof DONE)[number]>) => inApp(async (call, a) => {
  const o = await organizationOf(call, a);
  if (o) call.res.redirect(303, orgUrl(a, o, call.s.locale, await work(call, a, o)));
});
const confirmed = (s: Signed, body: Record<string, string>) => {
  if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
};
const memberId = (req: Request) => {
  if (!/^\d{1,15}$/.test(String(req.params.id))) throw invalidField('account', 'is not an account of this organization');
  return Number(req.params.id);
};

/** A member added by address, with the roles typed (else the organization's default roles). */
export const addOrganizationMember = change(async ({ s, p, body }, a, o) => {
  const record = await consoleRecordByAddress(p.services, { app: a, email: body.email ?? '' });
  if (!record) throw invalidField('email', say(s.locale, 'noAccountAtAddress'));
  const roles = rolesOf(body.roles);
  await addMember(p.services, { app: a, acting: s.operator.acting, organizationId: o.organizationId, entityId: record.id, roles: roles.length ? roles : o.defaultRoles });
  return 'memberAdded';
});
/** A member's roles set. */
export const setOrganizationRoles = change(async ({ req, s, p, body }, a, o) => {
  await setMemberRoles(p.services, { app: a, acting: s.operator.acting, organizationId: o.organizationId, entityId: memberId(req), roles: rolesOf(body.roles) });
  return 'rolesChanged';
});
/** A member removed, confirmed. */
export const removeOrganizationMember = change(async ({ req, s, p, body }, a, o) => {
  confirmed(s, body);
  await removeMember(p.services, { app: a, acting: s.operator.acting, organizationId: o.organizationId, entityId: memberId(req) });
  return 'memberRemoved';
});
/** Someone invited by address. */
export const inviteToOrganization = change(async ({ s, p, body }, a, o) => {
  const roles = rolesOf(body.roles);
  await createInvitation(p.services, { app: a, acting: s.operator.acting, organizationId: o.organizationId, email: body.email ?? '', roles: roles.length ? roles : o.defaultRoles, locale: s.locale });
  return 'invited';
});
/** An invitation mailed again, or revoked (confirmed). */
export const invitationAction = change(async ({ req, s, p, body }, a, o) => {
  const command = { app: a, acting: s.operator.acting, organizationId: o.organizationId, invitationId: String(req.params.id) };
  if (req.params.action === 'resend') return await resendInvitation(p.services, command), 'invitationResent';
  if (req.params.action !== 'revoke') throw new Refusal('gone', say(s.locale, 'noSuchAction'));
  confirmed(s, body);
  await revokeInvitation(p.services, command);
  return 'invitationRevoked';
});
