import { event, recordSubject, type Acting } from '../../domain/events';
import { displayName } from '../../domain/mail';
import { INVITATION_SECRET, isOwner, knownRoles, limitOf, newInvitationId, newInvitationSecret } from '../../domain/organizations';
import { invalidField, LimitReachedError, Refusal } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import type { Application } from '../../domain/storage/applications';
import type { Page, StoredInvitation, StoredMember, StoredOrganization } from '../../domain/storage/organizations';
import type { Services } from '../services';
import { markTime } from '../records/versions';
import type { UnitOfWork } from '../unit-of-work';
import { authorityIn, currentSettings, knownRolesOf, mustManage, organizationOf, organizationSubject, type OrgDeps } from './common';
import { join } from './members';
import { MAX_PAGE } from './organizations';

/**
 * Invitations to an organization (docs/organizations.md#invitations): made by the application's
 * backend, an operator, or the organization's owners and admins; mailed to the address with a link
 * whose secret is stored as its SHA-256 only; accepted once, before it expires, by an account whose
 * address is the invited one.
 */

/** The path of the hosted page an invitation links to (its secret in `token`). */
export const INVITATION_PATH = '/invitation';

const EMAIL = /^[^\s@<>",;]{1,64}@[^\s@<>",;]+\.[^\s@<>",;]+$/;
/** An address as invitations keep and compare it. */
export const invitedAddress = (email: string): string => email.trim().normalize('NFC').toLowerCase();

/** Where an invitation stands for whoever holds its link. */
export type InvitationStanding = 'pending' | 'accepted' | 'revoked' | 'expired';
export const standingOf = (i: StoredInvitation, now: Date): InvitationStanding => (i.state === 'pending' && i.expiresAt.getTime() <= now.getTime() ? 'expired' : i.state);

/** An invitation made: it and the organization (the link is only in the email). */
export async function createInvitation(
  deps: OrgDeps & Pick<Services, 'baseUrls'>,
  command: { app: Application; acting: Acting; organizationId: string; email: string; roles: readonly string[]; locale: string },
): Promise<StoredInvitation> {
  const { app } = command;
  const email = invitedAddress(command.email);
  if (email.length > 254 || !EMAIL.test(email)) throw invalidField('email', 'is not an email address, such as grace@acme.com');
  const roles = await knownRolesOf(deps, app, command.roles);
  return deps.work.run((uow) => inviteInWork(deps, uow, { ...command, email, roles }));
}

/** An invitation made in the caller's unit of work (the address normalized and the roles known): its limits, its row, its event and its email. */
async function inviteInWork(
  deps: OrgDeps & Pick<Services, 'baseUrls'>, uow: UnitOfWork,
  command: { app: Application; acting: Acting; organizationId: string; email: string; roles: string[]; locale: string },
): Promise<StoredInvitation> {
  const { app, acting, email, roles } = command;
  const organization = await organizationOf(deps, app, command.organizationId, uow.tx);
  const authority = await authorityIn(deps, organization, acting, uow.tx);
  mustManage(authority, 'invite');
  if (authority.kind === 'member' && isOwner(roles) && !isOwner(authority.member.roles)) throw new Refusal('forbidden', 'only an owner of the organization invites an owner');
  const now = deps.clock.now();
  await deps.db.organizations.touch(organization.id, now, uow.tx);
  const hourAgo = new Date(now.getTime() - 3600_000);
  const settings = await currentSettings(deps, app, uow.tx);
  const perOrganization = limitOf(settings, 'organization_invitations_per_hour');
  if ((await deps.db.organizations.countInvitationsSince({ organizationKey: organization.id }, hourAgo, uow.tx)) >= perOrganization) {
    throw new LimitReachedError(3600, `invitations to this organization in an hour (at most ${perOrganization}: setting organization_invitations_per_hour)`);
  }
  const inviter = (acting.actor.kind === 'account' ? `account:${acting.actor.accountId}` : acting.actor.kind === 'client' ? `client:${acting.actor.clientId}`
    : acting.actor.kind === 'operator' ? `operator:${acting.actor.name}` : 'system').slice(0, 128);
  // an account's invitations to every organization are counted one after another (its row's lock,
  // and its claim, on every Galera node)
  if (acting.actor.kind === 'account' && await deps.db.records.findForUpdate(app.id, acting.actor.accountId, uow.tx)) {
    await deps.db.records.claim(acting.actor.accountId, now, uow.tx);
  }
  const perInviter = limitOf(settings, 'organization_invitations_per_inviter_per_hour');
  if ((await deps.db.organizations.countInvitationsSince({ applicationId: app.id, inviter }, hourAgo, uow.tx)) >= perInviter) {
    throw new LimitReachedError(3600, `invitations by you in an hour (at most ${perInviter}: setting organization_invitations_per_inviter_per_hour)`);
  }
  const existing = await deps.db.records.find(app.id, { email }, uow.tx);
  if (existing && (await deps.db.organizations.findMember(organization.id, existing.id, uow.tx))) throw invalidField('email', 'is the address of a member of this organization already');
  const secret = newInvitationSecret();
  const days = limitOf(settings, 'organization_invitation_days');
  const inviterRecord = acting.actor.kind === 'account' ? await deps.db.records.find(app.id, { id: acting.actor.accountId }, uow.tx) : undefined;
  const invitation = await deps.db.organizations.insertInvitation({
    applicationId: app.id, organizationKey: organization.id, invitationId: newInvitationId(), email, roles,
    inviterEntityId: acting.actor.kind === 'account' ? acting.actor.accountId : null, inviter, locale: command.locale,
    tokenHash: sha256Hex(secret), expiresAt: new Date(now.getTime() + days * 86_400_000),
  }, now, uow.tx);
  const link = new URL(INVITATION_PATH, deps.baseUrls.of(app.name));
  link.searchParams.set('token', secret);
  // the page speaks the email's language
  link.searchParams.set('locale', command.locale);
  uow.record(event('organization.invitation_created', app.id, now, acting, organizationSubject(organization), {
    organization: organization.organizationId, invitation: invitation.invitationId, roles,
  }, {
    mail: {
      app, template: 'organization-invitation', locale: command.locale, to: email, name: email.split('@')[0], link: link.toString(), expiresIn: days * 86_400,
      organizationName: organization.name, inviterName: inviterRecord ? displayName(inviterRecord) : undefined,
    },
  }));
  return invitation;
}

/**
 * An invitation mailed again (the console's "resend"): in one unit of work, the old one revoked
 * (it must still be pending: of two resends at once, the second finds it revoked and does nothing)
 * and a new one made to the same address with the same roles and language, so only the newest link
 * works. The new one counts against the limits as any invitation does.
 */
export async function resendInvitation(
  deps: OrgDeps & Pick<Services, 'baseUrls'>, command: { app: Application; acting: Acting; organizationId: string; invitationId: string },
): Promise<StoredInvitation> {
  return deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    mustManage(await authorityIn(deps, organization, command.acting, uow.tx), 'send invitations');
    const old = await deps.db.organizations.findInvitation(command.app.id, command.invitationId, uow.tx);
    if (!old || old.organizationKey !== organization.id) throw unknownInvitation();
    const now = deps.clock.now();
    // the row's update is its lock: a resend or revoke at the same time waits, then finds it finished
    if (standingOf(old, now) !== 'pending' || !(await deps.db.organizations.finishInvitation(old, 'revoked', null, now, uow.tx))) {
      throw invalidField('invitationId', 'is not pending any more (accepted, revoked, expired or sent again): invite the address again instead');
    }
    uow.record(event('organization.invitation_revoked', command.app.id, now, command.acting, organizationSubject(organization), {
      organization: organization.organizationId, invitation: old.invitationId,
    }));
    return inviteInWork(deps, uow, { ...command, email: old.email, roles: old.roles, locale: old.locale });
  });
}

/** An organization's invitations, newest first: for the backend, an operator, or its owners and admins. */
export async function listInvitations(
  deps: Pick<OrgDeps, 'db'>, command: { app: Application; acting: Acting; organizationId: string; after: number | null; limit: number },
): Promise<Page<StoredInvitation>> {
  const organization = await organizationOf(deps, command.app, command.organizationId);
  mustManage(await authorityIn(deps, organization, command.acting), 'see its invitations');
  return deps.db.organizations.listInvitationsPage(organization.id, command.after, Math.min(MAX_PAGE, Math.max(1, command.limit)));
}

const unknownInvitation = () => invalidField('invitationId', 'is not an invitation of this organization (/organizations/invitations/list names them)');

/** Revokes a pending invitation: its link no longer works. */
export async function revokeInvitation(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; invitationId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    mustManage(await authorityIn(deps, organization, command.acting, uow.tx), 'revoke invitations');
    const invitation = await deps.db.organizations.findInvitation(command.app.id, command.invitationId, uow.tx);
    if (!invitation || invitation.organizationKey !== organization.id) throw unknownInvitation();
    const now = deps.clock.now();
    if (standingOf(invitation, now) !== 'pending') throw invalidField('invitationId', `was ${standingOf(invitation, now)} already: only a pending invitation is revoked`);
    await deps.db.organizations.finishInvitation(invitation, 'revoked', null, now, uow.tx);
    uow.record(event('organization.invitation_revoked', command.app.id, now, command.acting, organizationSubject(organization), {
      organization: organization.organizationId, invitation: invitation.invitationId,
    }));
  });
}

const notALink = () => invalidField('token', 'is not an invitation link of this application: open the link of the email as it is');

/** The invitation a link holds, with its organization and where it stands (the hosted page shows them); undefined for no invitation. */
export async function invitationOfLink(
  deps: Pick<OrgDeps, 'db' | 'clock'>, command: { app: Application; secret: string },
): Promise<{ invitation: StoredInvitation; organization: StoredOrganization; standing: InvitationStanding } | undefined> {
  if (!INVITATION_SECRET.test(command.secret)) return undefined;
  const invitation = await deps.db.organizations.findInvitationByToken(sha256Hex(command.secret));
  if (!invitation || invitation.applicationId !== command.app.id) return undefined;
  const organization = await deps.db.organizations.findByKey(invitation.organizationKey);
  if (!organization) return undefined;
  return { invitation, organization, standing: standingOf(invitation, deps.clock.now()) };
}

/**
 * The signed-in account accepts an invitation by its link: once (20 at once make one membership),
 * before it expires, only an account whose address is the invited one. The link was mailed to that
 * address, so holding it proves the address: an account whose address is not verified yet is
 * verified by accepting.
 */
export async function acceptInvitation(
  deps: OrgDeps & Pick<Services, 'versions'>, command: { app: Application; acting: Acting; entityId: number; secret: string },
): Promise<{ organization: StoredOrganization; member: StoredMember }> {
  if (!INVITATION_SECRET.test(command.secret)) throw notALink();
  return deps.work.run(async (uow) => {
    const invitation = await deps.db.organizations.findInvitationByToken(sha256Hex(command.secret), uow.tx);
    if (!invitation || invitation.applicationId !== command.app.id) throw notALink();
    const now = deps.clock.now();
    const standing = standingOf(invitation, now);
    if (standing === 'accepted') throw invalidField('token', 'was used already: an invitation is accepted once');
    if (standing === 'revoked') throw invalidField('token', 'was revoked by the organization: ask them for a new invitation');
    if (standing === 'expired') throw invalidField('token', 'has expired: ask the organization for a new invitation');
    const organization = await deps.db.organizations.findByKey(invitation.organizationKey, uow.tx);
    if (!organization) throw notALink();
    const record = await deps.db.records.findForUpdate(command.app.id, command.entityId, uow.tx);
    if (!record) throw new Refusal('gone', 'the account was deleted');
    if (record.email === null || invitedAddress(record.email) !== invitation.email) {
      throw invalidField('token', 'was sent to another address: sign in with the account of the address the invitation was sent to, or register with it');
    }
    if (!(await deps.db.organizations.finishInvitation(invitation, 'accepted', record.id, now, uow.tx))) throw invalidField('token', 'was used already: an invitation is accepted once');
    if (record.emailVerified === null) {
      await markTime(deps, uow, record, 'emailVerified', command.acting);
      uow.record(event('account.email_verified', command.app.id, now, command.acting, recordSubject(record.id), {}));
    }
    // a role removed since the invitation was made is left out; none left, the organization's default ones
    const known = knownRoles(await deps.db.organizations.listRoles(command.app.id, uow.tx));
    const kept = invitation.roles.filter((r) => known.has(r));
    const roles = kept.length > 0 ? kept : organization.defaultRoles;
    const joined = await join(deps, uow, { app: command.app, acting: command.acting, organization, entityId: record.id, roles, by: 'invitation', invitation: invitation.invitationId });
    const member = joined ?? (await deps.db.organizations.findMember(organization.id, record.id, uow.tx))!;
    return { organization, member };
  });
}
