import type { Tx } from './transactions';

/** An organization's SCIM bearer token (docs/scim.md#tokens): the token itself is never stored, only its SHA-256 digest. */
export interface StoredScimToken {
  id: number;
  applicationId: number;
  organizationKey: number;
  publicId: string;
  description: string;
  tokenHash: string;
  /** Who made it: `client:ID`, `operator:NAME` or `account:ID`. */
  createdBy: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export type NewScimToken = Omit<StoredScimToken, 'id' | 'createdAt' | 'lastUsedAt' | 'revokedAt'>;

/** A provisioned user: an account of the application, provisioned by one organization's directory, with the resource as written. */
export interface StoredScimUser {
  id: number;
  applicationId: number;
  organizationKey: number;
  entityId: number;
  /** The resource's id (the account's uuid). */
  resourceId: string;
  userName: string;
  externalId: string | null;
  /** The address the account was given, lower-cased. */
  emailKey: string | null;
  active: boolean;
  /** The resource's attributes as the directory wrote them (never a password), without id, meta or schemas. */
  data: Record<string, unknown>;
  version: number;
  /** The account was made by this directory, not found by its address. */
  owned: boolean;
  /** The member's roles while deactivated (its membership is gone until then). */
  suspendedRoles: string[] | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewScimUser = Omit<StoredScimUser, 'id' | 'version' | 'createdAt' | 'updatedAt'>;
export type ScimUserChange = Partial<Pick<StoredScimUser, 'userName' | 'externalId' | 'emailKey' | 'active' | 'data' | 'suspendedRoles'>>;

export interface StoredScimGroup {
  id: number;
  applicationId: number;
  organizationKey: number;
  resourceId: string;
  displayName: string;
  externalId: string | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type NewScimGroup = Omit<StoredScimGroup, 'id' | 'version' | 'createdAt' | 'updatedAt'>;

/** A group's member, as a group resource lists it. */
export interface ScimGroupMember { userKey: number; resourceId: string; userName: string }

/** What a list of users may be narrowed to by an indexed column before the rest of a filter is applied. */
export type ScimUserLookup = { userName: string } | { externalId: string } | { email: string } | { resourceId: string };
/** The most rows one lookup answers (past it, a list reads the organization's users instead). */
export const MAX_LOOKUP = 1000;
export type ScimGroupLookup = { displayName: string } | { externalId: string } | { resourceId: string };

/** A userName, displayName or address as its unique key compares it: case-insensitively. */
export const scimKey = (value: string): string => value.normalize('NFC').toLowerCase();

/**
 * SCIM provisioning's rows (docs/scim.md). Each change of an organization's users and groups first
 * touches the organization's row in its transaction (OrganizationStore.touch), so uniqueness and
 * membership hold under parallel requests; inserting a userName or displayName that is taken (in
 * any case) answers undefined.
 */
export interface ScimStore {
  insertToken(token: NewScimToken, now: Date, tx: Tx): Promise<StoredScimToken>;
  /** A live (not revoked) token by its digest, with its organization's public id. */
  findToken(tokenHash: string): Promise<{ token: StoredScimToken; organizationId: string } | undefined>;
  findTokenById(applicationId: number, publicId: string, tx?: Tx): Promise<StoredScimToken | undefined>;
  /** The application's tokens, every organization's, newest first (at most `limit`), with their organization's public id. */
  listTokensOfApplication(applicationId: number, limit: number): Promise<{ token: StoredScimToken; organizationId: string }[]>;
  /** An organization's tokens: every live one, then the revoked ones, newest first (at most 100 in all, never leaving a live one out). */
  listTokens(organizationKey: number, tx?: Tx): Promise<StoredScimToken[]>;
  countLiveTokens(organizationKey: number, tx?: Tx): Promise<number>;
  revokeToken(token: StoredScimToken, now: Date, tx: Tx): Promise<boolean>;
  /** Records a use (at most once a minute per token is written: see the use case). */
  touchTokenAlone(tokenKey: number, now: Date): Promise<void>;

  /** A new user, with every address its emails name (`emails.value` lookups find it by any). */
  insertUser(user: NewScimUser, emails: string[], now: Date, tx: Tx): Promise<StoredScimUser | undefined>;
  /** The users a lookup finds, at most `limit` (1,000 unless given), by key. */
  findUser(organizationKey: number, lookup: ScimUserLookup, tx?: Tx, limit?: number): Promise<StoredScimUser[]>;
  /** The organization's users with these resource ids (any number, read in batches). */
  findUsersByResourceIds(organizationKey: number, resourceIds: string[], tx?: Tx): Promise<StoredScimUser[]>;
  /** Users by key (any number, read in batches). */
  findUsersByKeys(userKeys: number[], tx?: Tx): Promise<StoredScimUser[]>;
  /** A new version of each (their groups changed). */
  bumpUsers(userKeys: number[], now: Date, tx: Tx): Promise<void>;
  findUserOfAccount(organizationKey: number, entityId: number, tx?: Tx): Promise<StoredScimUser | undefined>;
  /** The organization's users, by key, `limit` after the key `after`. */
  listUsers(organizationKey: number, after: number, limit: number, tx?: Tx): Promise<StoredScimUser[]>;
  countUsers(organizationKey: number, tx?: Tx): Promise<number>;
  /** Changes it, a new version (`emails`: every address its emails name now); false when its userName is taken. */
  updateUser(user: StoredScimUser, change: ScimUserChange, now: Date, tx: Tx, emails?: string[]): Promise<boolean>;
  removeUser(user: StoredScimUser, tx: Tx): Promise<void>;
  /** The groups of these users (by key): each user's groups' keys and display names. */
  listGroupsOfUsers(userKeys: number[], tx?: Tx): Promise<Map<number, { groupKey: number; resourceId: string; displayName: string }[]>>;

  insertGroup(group: NewScimGroup, now: Date, tx: Tx): Promise<StoredScimGroup | undefined>;
  findGroup(organizationKey: number, lookup: ScimGroupLookup, tx?: Tx): Promise<StoredScimGroup[]>;
  listGroups(organizationKey: number, after: number, limit: number, tx?: Tx): Promise<StoredScimGroup[]>;
  countGroups(organizationKey: number, tx?: Tx): Promise<number>;
  /** Renames it (or changes its externalId), a new version; false when the name is taken. */
  updateGroup(group: StoredScimGroup, change: Partial<Pick<StoredScimGroup, 'displayName' | 'externalId'>>, now: Date, tx: Tx): Promise<boolean>;
  /** A new version of each (their members changed). */
  bumpGroups(groupKeys: number[], now: Date, tx: Tx): Promise<void>;
  removeGroup(group: StoredScimGroup, tx: Tx): Promise<void>;
  /** Its members (at most `limit`), in the order added. */
  listMembersOf(groupKey: number, limit: number, tx?: Tx): Promise<ScimGroupMember[]>;
  countMembersOf(groupKeys: number[], tx?: Tx): Promise<Map<number, number>>;
  /** Adds users (by key) to it; answers those that were not members. */
  addMembers(groupKey: number, userKeys: number[], tx: Tx): Promise<number[]>;
  /** Removes users (by key) from it; answers those that were members. */
  removeMembers(groupKey: number, userKeys: number[], tx: Tx): Promise<number[]>;

  /** The organization's groups mapped to its roles (group display name, compared case-insensitively, to roles). */
  findGroupRoles(organizationKey: number, tx?: Tx): Promise<Record<string, string[]>>;
  setGroupRoles(organizationKey: number, applicationId: number, roles: Record<string, string[]>, now: Date, tx: Tx): Promise<void>;
}
