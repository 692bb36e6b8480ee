import type { Tx } from './transactions';

/** An API of an application (docs/openid-connect.md#apis), as stored. */
export interface StoredApi {
  id: number;
  applicationId: number;
  /** Its public id (`api_…`). */
  publicId: string;
  /** Its resource indicator (RFC 8707): the `resource` clients ask for, the tokens' `aud`. */
  identifier: string;
  name: string;
  /** The scopes it defines, in the order given. */
  scopes: string[];
  /** The scopes each client (by its client id) may ask for in its own tokens (the client credentials grant). */
  clientScopes: Record<string, string[]>;
  /** How long its access tokens live; null: the default. */
  tokenSeconds: number | null;
  /** A person's token has only the scopes their roles give. */
  rbac: boolean;
  /** A person's token lists the scopes their roles give (`permissions`). */
  permissionsInToken: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type NewApi = Omit<StoredApi, 'id' | 'createdAt' | 'updatedAt'>;

/** What an update may change: its name, scopes, clients' scopes, token lifetime (its identifier names it for good). */
export type ApiChange = Partial<Pick<StoredApi, 'name' | 'scopes' | 'tokenSeconds' | 'clientScopes' | 'rbac' | 'permissionsInToken'>>;

/** Thrown when an application already has an API of that identifier. */
export class DuplicateApiError extends Error {}

/** The applications' APIs: one per identifier and application. */
export interface ApiStore {
  /** Adds one (DuplicateApiError when its identifier is taken). */
  insert(api: NewApi, now: Date, tx: Tx): Promise<StoredApi>;
  /** The application's APIs, oldest first. */
  list(applicationId: number, tx?: Tx): Promise<StoredApi[]>;
  /** By its public id; locked to the end of `tx` when one is given. */
  find(applicationId: number, publicId: string, tx?: Tx): Promise<StoredApi | undefined>;
  /** By its resource indicator, exactly as stored. */
  findByIdentifier(applicationId: number, identifier: string): Promise<StoredApi | undefined>;
  /** Changes one; false when it is gone. */
  update(applicationId: number, publicId: string, change: ApiChange, now: Date, tx: Tx): Promise<boolean>;
  remove(applicationId: number, publicId: string, tx: Tx): Promise<boolean>;
}

/** A role of the application (docs/openid-connect.md#roles): the scopes of its APIs it gives, by API public id. */
export interface StoredAppRole {
  id: number;
  applicationId: number;
  name: string;
  description: string;
  permissions: Record<string, string[]>;
  createdAt: Date;
  updatedAt: Date;
}

/** The application's roles and who holds them. */
export interface RoleStore {
  /** Defines a role, or replaces its description and permissions; answers it. */
  define(applicationId: number, role: Pick<StoredAppRole, 'name' | 'description' | 'permissions'>, now: Date, tx: Tx): Promise<StoredAppRole>;
  /** The application's roles by name. */
  list(applicationId: number, tx?: Tx): Promise<StoredAppRole[]>;
  /** By name; locked to the end of `tx` when one is given. */
  find(applicationId: number, name: string, tx?: Tx): Promise<StoredAppRole | undefined>;
  /** Removes a role from the application and from every account holding it; answers how many held it, or undefined when there was none. */
  remove(applicationId: number, name: string, tx: Tx): Promise<number | undefined>;
  /** Gives the account these roles (those it holds stay); answers the names it did not hold. */
  assign(applicationId: number, entityId: number, roles: StoredAppRole[], now: Date, tx: Tx): Promise<string[]>;
  /** Takes these roles from the account; answers the names it held. */
  unassign(applicationId: number, entityId: number, roles: StoredAppRole[], tx: Tx): Promise<string[]>;
  /** The account's roles by name (in `tx`: as the change being made sees them). */
  listOf(applicationId: number, entityId: number, tx?: Tx): Promise<StoredAppRole[]>;
  /** The roles of the account of `uuid` (none for no such account), in one read: what a token's issue asks for. */
  listOfAccount(applicationId: number, uuid: string): Promise<StoredAppRole[]>;
}
