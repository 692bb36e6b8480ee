import { randomUUID } from 'node:crypto';
import type { Written } from '../../domain/versions';
import { insertRecord, touchRecord } from '../records/versions';
import { event, recordSubject, type Acting } from '../../domain/events';
import { domainOf } from '../../domain/organizations';
import type { AssertionFacts } from '../../domain/saml/assertions';
import { NAME_ID_FORMATS } from '../../domain/saml/xml';
import type { StoredConnection } from '../../domain/storage/connections';
import { registrationOpen } from '../../domain/registration';
import { DuplicateAttributeError, isDisabled, type UserRecord } from '../../domain/storage/records';
import { USER_TYPE } from '../../domain/users';
import type { LoginCall, SignInOutcome } from '../login/call';
import { accountDisabled, signedIn } from '../login/signed-in';
import { vouchedDomains } from '../organizations/domains';
import { join } from '../organizations/members';
import { asAccount } from '../services';

/**
 * The sign-in an organization's connection proved (docs/organizations.md#connections), SAML or
 * OpenID alike: the account it names, made or linked just in time, a member of the organization,
 * then signed in as any other sign-in is.
 */

/** Why a connection's sign-in is refused (shown to the person, with what to fix). */
export class ConnectionRefusal extends Error {}

/** What a connection proved, waiting for its browser: its connection and what it asserted (a SAML assertion's facts, or an ID token's claims as attributes). */
export interface CheckedResponse { connection: string; facts: AssertionFacts }

/** The OpenID subject's NameID format (its `sub` at its issuer). */
export const OIDC_SUBJECT = 'urn:gatehouse:oidc:sub';

/** What a record's attributes are taken from when the connection maps none: the usual SAML attributes and OpenID claims. */
const DEFAULT_ATTRIBUTES: Record<string, string[]> = {
  givenName: ['givenName', 'given_name', 'urn:oid:2.5.4.42', 'urn:mace:dir:attribute-def:givenName', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname'],
  familyName: ['sn', 'surname', 'family_name', 'urn:oid:2.5.4.4', 'urn:mace:dir:attribute-def:sn', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname'],
  displayName: ['displayName', 'name', 'urn:oid:2.16.840.1.113730.3.1.241', 'urn:mace:dir:attribute-def:displayName', 'http://schemas.microsoft.com/identity/claims/displayname'],
};

/** The address an assertion names: its NameID in the emailAddress format, else the mapped or usual email attribute. */
function emailOf(connection: StoredConnection, facts: AssertionFacts): string | undefined {
  const candidates = [
    ...(facts.nameIdFormat === NAME_ID_FORMATS.email ? [facts.nameId] : []),
    ...[connection.settings.attributes?.email, 'email', 'mail', 'emailAddress', 'urn:oid:0.9.2342.19200300.100.1.3', 'urn:mace:dir:attribute-def:mail',
      'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'].flatMap((n) => (n ? facts.attributes[n] ?? [] : [])),
  ];
  return candidates.map((c) => c.trim()).find((c) => /^[^\s@]{1,64}@[^\s@]{1,253}$/.test(c));
}

/** The roles the assertion's groups give (none configured: undefined). */
function mappedRoles(connection: StoredConnection, facts: AssertionFacts): string[] | undefined {
  const groups = connection.settings.groups;
  if (!groups) return undefined;
  return [...new Set((facts.attributes[groups.attribute] ?? []).flatMap((g) => groups.roles[g] ?? []))].sort();
}

/**
 * Signs in the person a checked response asserts (docs/organizations.md#connections): the account
 * its identity (the connection and NameID) is linked to; else the account with its address,
 * verified, at a domain the organization verified (its identity linked); else a new account,
 * verified, with the mapped attributes. It becomes a member with the organization's default roles
 * (or the roles its groups map to). Then the sign-in goes on as any other: the application's
 * second factor, a disabled account refused.
 */
export async function connectionSignIn(
  ctx: LoginCall<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  command: { checked: CheckedResponse },
): Promise<SignInOutcome> {
  const { db, clock, work } = ctx.services;
  const { request } = ctx;
  const connection = /^con_[0-9a-f]{24}$/.test(command.checked.connection) ? await db.connections.find(ctx.app.id, command.checked.connection) : undefined;
  if (!connection) throw new ConnectionRefusal('the connection of this sign-in was removed from its organization');
  const { facts } = command.checked;
  const organization = await db.organizations.findByKey(connection.organizationKey);
  if (!organization) throw new ConnectionRefusal('the organization of this connection was deleted');
  // a transient NameID is another at every sign-in: it names nobody Gatehouse could know again
  if (facts.nameIdFormat === NAME_ID_FORMATS.transient) {
    throw new ConnectionRefusal('the identity provider sent a transient NameID, which names nobody from one sign-in to the next: ask its administrator for a persistent or emailAddress NameID');
  }
  const identifier = `sso:${connection.publicId}:${facts.nameId}`;
  const provider = `sso:${connection.publicId}`;
  const linked = await db.social.profiles.byIdentifier(ctx.app.id, identifier);
  let record: UserRecord | undefined = linked && await db.records.find(ctx.app.id, { id: linked.entityId });
  const roles = mappedRoles(connection, facts);
  const mapped = Object.fromEntries(Object.entries(connection.settings.attributes ?? {}).filter(([to]) => to !== 'email').map(([to, from]) => [to, [from]]));
  const attributes = Object.fromEntries(Object.entries({ ...DEFAULT_ATTRIBUTES, ...mapped })
    .map(([to, from]) => [to, from.map((f) => facts.attributes[f]?.[0]).find((v) => typeof v === 'string' && v !== '')]).filter((e): e is [string, string] => e[1] !== undefined));
  if (!record) {
    const email = emailOf(connection, facts);
    if (!email) throw new ConnectionRefusal('the identity provider gave no email address (a NameID in the emailAddress format, or an email attribute): ask its administrator to send one');
    const domain = domainOf(email);
    const verified = await vouchedDomains(ctx.services, organization);
    if (!verified.includes(domain)) {
      throw new ConnectionRefusal(`the connection vouches for addresses at its organization's verified domains only (those the application verified: ${verified.join(', ') || 'none yet'}), and ${domain} is not one of them`);
    }
    record = await work.run(async (uow) => {
      const now = clock.now();
      const holder = await db.records.find(ctx.app.id, { email }, uow.tx);
      if (holder) {
        // an account at that address: its own, once the address was proven; never one a stranger registered unverified
        if (!holder.emailVerified) {
          throw new ConnectionRefusal('an account with this address exists but never proved it: verify the address from that account first (or ask an operator), then sign in through the organization again');
        }
        const locked = await db.records.findForUpdate(ctx.app.id, holder.id, uow.tx);
        if (!locked) throw new ConnectionRefusal('the account was deleted meanwhile: start again');
        // an account that is someone else's identity at this provider already (an address given to a new person): never taken over by its address
        if ((await db.social.profiles.forEntity(ctx.app.id, holder.id, uow.tx)).some((p) => p.provider === provider)) {
          throw new ConnectionRefusal('the account with this address is linked to another identity at this organization\'s identity provider: an operator decides whose it is');
        }
        await db.social.profiles.insert({ applicationId: ctx.app.id, entityId: holder.id, provider, identifier, data: { connection: connection.publicId, nameId: facts.nameId } }, now, uow.tx);
        const acting = asAccount(ctx, holder.id, request.client);
        uow.record(event('account.identity_linked', ctx.app.id, now, acting, recordSubject(holder.id), { provider }));
        return (await touchRecord(ctx.services, uow, locked, acting, ['profiles'])).record;
      }
      // an application that takes no registrations (the operators') lets a connection link its accounts, never make one
      if (!registrationOpen(ctx.app, request.client)) {
        throw new ConnectionRefusal('this application does not take registrations, and no account has this address: an operator makes the account first, then the organization\'s sign-in links it');
      }
      let made: { written: Written; acting: Acting };
      try {
        made = await insertRecord(ctx.services, uow, {
          applicationId: ctx.app.id, typeName: USER_TYPE, uuid: randomUUID(), email, username: null, passwordHash: null, emailVerified: now, attributes,
        }, (created) => asAccount(ctx, created.id, request.client), {
          attach: async (created) => void await db.social.profiles.insert({ applicationId: ctx.app.id, entityId: created.id, provider, identifier, data: { connection: connection.publicId, nameId: facts.nameId } }, now, uow.tx),
        });
      } catch (e) {
        if (e instanceof DuplicateAttributeError) throw new ConnectionRefusal('an account with this address was made meanwhile: start the sign-in again');
        throw e;
      }
      const created = made.written.record;
      const subject = recordSubject(created.id);
      uow.record(
        event('account.registered', ctx.app.id, now, made.acting, subject, { method: 'connection' }),
        event('account.identity_linked', ctx.app.id, now, made.acting, subject, { provider }),
      );
      return created;
    });
  }
  if (isDisabled(record, clock.now())) throw accountDisabled(ctx, request);
  const account = record;
  // a member of the organization, with its default roles (or those its groups give)
  await work.run(async (uow) => {
    const acting = asAccount(ctx, account.id, request.client);
    const member = await db.organizations.findMember(organization.id, account.id, uow.tx);
    if (!member) {
      const given = roles && roles.length > 0 ? roles : organization.defaultRoles;
      await join(ctx.services, uow, { app: ctx.app, acting, organization, entityId: account.id, roles: given, by: 'connection' });
    } else if (roles && roles.length > 0 && roles.join(' ') !== member.roles.join(' ')) {
      await db.organizations.touch(organization.id, clock.now(), uow.tx);
      await db.organizations.setRoles(member, roles, clock.now(), uow.tx);
      uow.record(event('organization.member_roles_changed', ctx.app.id, clock.now(), acting, recordSubject(account.id), { organization: organization.organizationId, roles }));
    }
  });
  return signedIn(ctx, request, account, { factors: ['connection'], connection: connection.publicId });
}
