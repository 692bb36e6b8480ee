import { isOwner, managesMembers } from '../../domain/organizations';
import type { Membership } from '../../domain/storage/organizations';
import { asAccount } from '../../usecases/services';
import { organizationsOf, removeMember, switchOrganization } from '../../usecases/organizations/members';
import { createInvitation } from '../../usecases/organizations/invitations';
import { listRoles } from '../../usecases/organizations/roles';
import { pageCall } from '../login-calls';
import { pageFailure } from '../hosted';
import { escape, originOf, type PageLocale } from '../pages';
import { actionForm, type Done, doneTo, type Page, say, sayHtml, type Section, type Signed, type SignedWork, signedOutPage } from './parts';

/** The organizations the account belongs to (docs/organizations.md#for-members), the active one first. */
export const organizationsSection: Section = {
  id: 'h-organizations',
  title: 'organizations',
  draw: async ({ p, s: { app, locale, session }, token }) => {
    const t = sayHtml(locale);
    const memberships = session.entityId === null ? [] : await organizationsOf(p.services, { app, entityId: session.entityId });
    const roleNames = memberships.some((m) => managesMembers(m.member.roles)) ? (await listRoles(p.services, { app })).map((r) => r.name) : [];
    return memberships.length === 0 ? `<p>${t('noOrganizations')}</p>` : '<ul class="items">' + memberships.map((m, i) => {
      const active = i === 0 && m.member.activeAt !== null;
      return `<li><p><strong>${escape(m.organization.name)}</strong>${active ? ` <span class="tag">${t('activeOrganization')}</span>` : ''}<br>`
        + `${t('organizationRoles', { roles: m.member.roles.join(', ') })}</p>`
        + (active ? '' : actionForm('/account/organizations/switch', token, say(locale, 'makeActive', { name: m.organization.name }), { organization: m.organization.organizationId }, '', true))
        + actionForm('/account/organizations/leave', token, say(locale, 'leaveOrganization', { name: m.organization.name }), { organization: m.organization.organizationId }, '', true)
        // its owners and admins invite (an owner may invite an owner)
        + (managesMembers(m.member.roles) ? inviteForm(locale, token, m, roleNames) : '')
        + '</li>';
    }).join('') + '</ul>';
  },
};

/** An owner's or admin's form to invite an address to the organization with a role. */
function inviteForm(locale: PageLocale, token: string, m: Membership, roleNames: string[]): string {
  const id = `invite-${m.organization.organizationId}`;
  const roles = roleNames.filter((r) => r !== 'owner' || isOwner(m.member.roles));
  return actionForm('/account/organizations/invite', token, say(locale, 'invite'), { organization: m.organization.organizationId },
    `<label for="${id}-email">${escape(say(locale, 'inviteEmail', { name: m.organization.name }))}</label><input id="${id}-email" name="email" type="email" maxlength="254" autocomplete="off" required>`
    + `<label for="${id}-role">${escape(say(locale, 'inviteRole'))}</label><select id="${id}-role" name="role">`
    + roles.map((r) => `<option value="${escape(r)}"${r === 'member' ? ' selected' : ''}>${escape(r)}</option>`).join('') + '</select>', true);
}

/** A change of the account's organizations from the page (switch, leave): then back to the page saying `done`, or the page with why not. */
const organizationWork = (p: Page, done: Done, work: (s: Signed, acting: AccountActing, organizationId: string, body: Record<string, string>) => Promise<void>): SignedWork =>
  async (req, res, s, body) => {
    if (s.session.entityId === null) return signedOutPage(res, s.app, s.locale, 401, say(s.locale, 'signedOut'));
    const acting = asAccount({ origin: originOf(req, res) }, s.session.entityId, s.client) as AccountActing;
    const outcome = await pageCall(res, () => work(s, acting, (body.organization ?? '').slice(0, 64), body));
    if (!outcome.error) return doneTo(res, s, done);
    const { status, shown } = pageFailure(res, s.locale, 'account', outcome.error);
    await p.show(req, res, s, status, shown);
  };
type AccountActing = ReturnType<typeof asAccount> & { actor: { kind: 'account'; accountId: number } };

export const organizationSwitch = (p: Page) => organizationWork(p, 'organizationSwitched', (s, acting, organizationId) =>
  switchOrganization(p.services, { app: s.app, acting, organizationId }));
export const organizationLeave = (p: Page) => organizationWork(p, 'organizationLeft', (s, acting, organizationId) =>
  removeMember(p.services, { app: s.app, acting, organizationId, entityId: acting.actor.accountId }));
export const organizationInvite = (p: Page) => organizationWork(p, 'organizationInvited', async (s, acting, organizationId, body) => {
  await createInvitation(p.services, { app: s.app, acting, organizationId, email: (body.email ?? '').slice(0, 254), roles: [(body.role ?? 'member').slice(0, 64)], locale: s.locale });
});
