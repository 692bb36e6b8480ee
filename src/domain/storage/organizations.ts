import type { Tx } from './transactions';

/** An organization as stored (docs/organizations.md#the-model): `id` its key, `organizationId` its public id (`org_…`). */
export interface StoredOrganization {
  id: number;
  applicationId: number;
  organizationId: string;
  name: string;
  slug: string;
  logoUrl: string | null;
  metadata: Record<string, unknown>;
  /** Just-in-time membership: an account signing in with a verified address at one of its verified domains joins with `defaultRoles`. */
  joinByDomain: boolean;
  defaultRoles: string[];
  createdAt: Date;
  updatedAt: Date;
}

export type NewOrganization = Pick<StoredOrganization, 'applicationId' | 'organizationId' | 'name' | 'slug' | 'logoUrl' | 'metadata' | 'joinByDomain' | 'defaultRoles'>;
export type OrganizationChange = Partial<Pick<StoredOrganization, 'name' | 'slug' | 'logoUrl' | 'metadata' | 'joinByDomain' | 'defaultRoles'>>;

/** How an account became a member. */
export type JoinedBy = 'created' | 'api' | 'invitation' | 'domain' | 'connection' | 'scim';

/** A membership: an account of the application in an organization, with its roles (sorted). */
export interface StoredMember {
  id: number;
  organizationKey: number;
  entityId: number;
  roles: string[];
  joinedBy: JoinedBy;
  activeAt: Date | null;
  createdAt: Date;
}

/** A member with what names its account (for lists). */
export interface ListedMember extends StoredMember { uuid: string; email: string | null; username: string | null }

/** One of an account's memberships, with its organization. */
export interface Membership { organization: StoredOrganization; member: StoredMember }

/** A role an application defined (or a built-in one it gave permissions to). */
export interface StoredRole { name: string; description: string; permissions: string[]; createdAt: Date; updatedAt: Date }

export type InvitationState = 'pending' | 'accepted' | 'revoked';

export interface StoredInvitation {
  id: number;
  applicationId: number;
  organizationKey: number;
  invitationId: string;
  /** The invited address, as normalized (lower case). */
  email: string;
  roles: string[];
  inviterEntityId: number | null;
  /** Who invited: `account:ID`, `client:ID` or `operator:NAME` (what the per-inviter limit counts). */
  inviter: string;
  /** The invitee's locale (the email's, the acceptance page's). */
  locale: string;
  tokenHash: string;
  state: InvitationState;
  expiresAt: Date;
  acceptedBy: number | null;
  finishedAt: Date | null;
  createdAt: Date;
}

export type NewInvitation = Omit<StoredInvitation, 'id' | 'state' | 'acceptedBy' | 'finishedAt' | 'createdAt'>;

/** A claimed domain: verified (by the application or an owner's address there) or not, and joinable once the application let accounts at it join. */
export interface StoredDomain { domain: string; verifiedBy: 'operator' | 'member' | null; verifiedAt: Date | null; joinableAt: Date | null; createdAt: Date }

/** One page of a list: the rows after the cursor (a key), and the cursor of the next page when there is one. */
export interface Page<T> { items: T[]; next: number | null }

/**
 * Organizations (docs/organizations.md), written in the transaction of their event. Changes of
 * an organization's members first `touch` its row in their transaction: two changes of one
 * organization's members never commit side by side, on one server (its row lock) or on a Galera
 * cluster (the second loses certification and runs again), so counted limits and "an
 * organization keeps an owner" hold under parallel requests.
 */
export interface OrganizationStore {
  /** The new organization; undefined when its slug is taken in the application. */
  insert(organization: NewOrganization, now: Date, transaction: Tx): Promise<StoredOrganization | undefined>;
  /** By its public id; locked to the end of `transaction` when one is given. */
  find(applicationId: number, organizationId: string, transaction?: Tx): Promise<StoredOrganization | undefined>;
  findBySlug(applicationId: number, slug: string): Promise<StoredOrganization | undefined>;
  /** By its key; locked to the end of `transaction` when one is given. */
  findByKey(id: number, transaction?: Tx): Promise<StoredOrganization | undefined>;
  /** The application's organizations, oldest first, `limit` after the key `after`. */
  listPage(applicationId: number, after: number | null, limit: number): Promise<Page<StoredOrganization>>;
  /** The application's organizations whose public id is `text`, whose slug begins with it, or whose name holds it (any case), by name; at most `limit`. */
  search(applicationId: number, text: string, limit: number): Promise<StoredOrganization[]>;
  /** Changes it; false when the new slug is taken. */
  update(organization: StoredOrganization, change: OrganizationChange, now: Date, transaction: Tx): Promise<boolean>;
  /** Removes it with its members, invitations and domains. */
  remove(organization: StoredOrganization, transaction: Tx): Promise<void>;
  /** Writes its row (updated_at): what serializes changes of its members, see above. */
  touch(organizationKey: number, now: Date, transaction: Tx): Promise<void>;

  /** A new membership (one not by a domain forgets an earlier departure); undefined when the account is a member already. */
  insertMember(organization: StoredOrganization, entityId: number, roles: string[], joinedBy: JoinedBy, now: Date, transaction: Tx): Promise<StoredMember | undefined>;
  findMember(organizationKey: number, entityId: number, transaction?: Tx): Promise<StoredMember | undefined>;
  /** Its members, oldest first, `limit` after the key `after`. */
  listMembersPage(organizationKey: number, after: number | null, limit: number): Promise<Page<ListedMember>>;
  countMembers(organizationKey: number, transaction?: Tx): Promise<number>;
  /** How many of its members hold `role`. */
  countWithRole(organizationKey: number, role: string, transaction?: Tx): Promise<number>;
  setRoles(member: StoredMember, roles: string[], now: Date, transaction: Tx): Promise<void>;
  /** Removes the membership, remembering the departure (findDeparture); false when there was none. */
  removeMember(organizationKey: number, entityId: number, now: Date, transaction: Tx): Promise<boolean>;
  /** When the account left the organization or was removed from it, if it did and has not joined again since by an invitation or the API. */
  findDeparture(organizationKey: number, entityId: number, transaction?: Tx): Promise<Date | undefined>;
  /** Makes it the account's active organization. */
  setActive(member: StoredMember, now: Date, transaction: Tx): Promise<void>;
  /** The account's memberships, the active one (the newest made so) first, then oldest first; at most `limit`. */
  listMembershipsOf(applicationId: number, entityId: number, limit: number): Promise<Membership[]>;
  /** How many organizations the account belongs to; in `transaction`, as committed now (a locking read). */
  countMembershipsOf(entityId: number, transaction?: Tx): Promise<number>;
  /**
   * The account's memberships written (their update time), then counted as they are now: what
   * decides whether a person removed from an organization still belongs to another. Two
   * organizations removing one person at once both write the same rows, so the second waits for
   * the first (on one server; or one of them runs again after a deadlock) or, on another Galera
   * node, runs again, and counts what the first left. Claimed first, before the removal, they are
   * taken in one order and wait rather than deadlock.
   */
  claimMembershipsOf(entityId: number, now: Date, transaction: Tx): Promise<number>;
  /** The public ids of the account's organizations with its roles in each, in the order joined, at most `limit` (the tokens' claims). */
  listOrganizationRolesOf(applicationId: number, entityId: number, limit: number): Promise<{ organizationId: string; roles: string[] }[]>;
  /**
   * The account's (by its uuid) roles in the organization (by its public id), each with the
   * permissions the application defined for it (none when it defined none): one read, for each
   * organization token; undefined when it is not a member.
   */
  findRolesOf(applicationId: number, uuid: string, organizationId: string): Promise<{ role: string; permissions: string[] }[] | undefined>;

  /** Defines a role (again): its description and permissions replaced. */
  defineRole(applicationId: number, role: Omit<StoredRole, 'createdAt' | 'updatedAt'>, now: Date, transaction: Tx): Promise<StoredRole>;
  listRoles(applicationId: number, transaction?: Tx): Promise<StoredRole[]>;
  /**
   * Removes a defined role, and takes it from every member holding it (one left with no role is
   * given `fallback`) and from the organizations' default roles; answers how many members held it,
   * or undefined when no such role was defined.
   */
  removeRole(applicationId: number, name: string, fallback: string, now: Date, transaction: Tx): Promise<number | undefined>;

  insertInvitation(invitation: NewInvitation, now: Date, transaction: Tx): Promise<StoredInvitation>;
  findInvitation(applicationId: number, invitationId: string, transaction?: Tx): Promise<StoredInvitation | undefined>;
  findInvitationByToken(tokenHash: string, transaction?: Tx): Promise<StoredInvitation | undefined>;
  /** Its invitations, newest first, `limit` before the key `after` (when given). */
  listInvitationsPage(organizationKey: number, after: number | null, limit: number): Promise<Page<StoredInvitation>>;
  /** Invitations made since `since`: of the organization, or by the inviter (`account:ID`, …) in the application. */
  countInvitationsSince(scope: { organizationKey: number } | { applicationId: number; inviter: string }, since: Date, transaction?: Tx): Promise<number>;
  /** Ends a pending invitation (accepted by an account, or revoked); false when it was not pending any more. */
  finishInvitation(invitation: StoredInvitation, state: 'accepted' | 'revoked', acceptedBy: number | null, now: Date, transaction: Tx): Promise<boolean>;

  /** Claims a domain (unverified unless `verifiedBy`); false when the organization claims it already. */
  insertDomain(organization: StoredOrganization, domain: string, verifiedBy: 'operator' | 'member' | null, joinable: boolean, now: Date, transaction: Tx): Promise<boolean>;
  listDomains(organizationKey: number, transaction?: Tx): Promise<StoredDomain[]>;
  /** Marks a claimed domain verified; false when it is not claimed (or verified already). */
  verifyDomain(organizationKey: number, domain: string, by: 'operator' | 'member', now: Date, transaction: Tx): Promise<boolean>;
  removeDomain(organizationKey: number, domain: string, transaction: Tx): Promise<boolean>;
  /** Lets accounts at a claimed domain join (verifying the claim as the application's if it was not), or no longer; false when it is not claimed. */
  setDomainJoinable(organizationKey: number, domain: string, joinable: boolean, now: Date, transaction: Tx): Promise<boolean>;
  /** The domains accounts join organizations by in the application (verified claims the application made joinable, of organizations that let them), each once. */
  listJoinableDomains(applicationId: number): Promise<string[]>;
  /** The organizations that let accounts at `domain` join (their claim of it verified and made joinable by the application, join_by_domain on). */
  listJoinableByDomain(applicationId: number, domain: string): Promise<StoredOrganization[]>;
}
