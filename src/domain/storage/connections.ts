import type { IdentityProviderDescriptor } from '../saml/metadata';
import type { Tx } from './transactions';

/** How a connection's assertion or claims become a record's attributes and the organization's roles. */
export interface ConnectionMappings {
  /** Record attributes (givenName, familyName, …) from SAML attribute names or OpenID claims. */
  attributes?: Record<string, string>;
  /** The SAML attribute or OpenID claim holding the person's groups, and the organization's roles each group gives. */
  groups?: { attribute: string; roles: Record<string, string[]> };
}

/** A SAML connection: the identity provider's metadata as given (or the URL it came from) and as read. */
export interface SamlConnectionSettings extends ConnectionMappings {
  type: 'saml';
  metadata: string;
  metadataUrl?: string;
  idp: IdentityProviderDescriptor;
  /** Responses no request of this service provider asked for are accepted (with a replay cache). */
  idpInitiated: boolean;
}

/** An OpenID connection: its issuer and client id (the secret sealed beside). */
export interface OidcConnectionSettings extends ConnectionMappings {
  type: 'oidc';
  issuer: string;
  clientId: string;
}

export type ConnectionSettings = SamlConnectionSettings | OidcConnectionSettings;

/** An organization's enterprise connection (docs/organizations.md#connections), as stored. */
export interface StoredConnection {
  id: number;
  applicationId: number;
  organizationKey: number;
  /** Its public id (`con_…`). */
  publicId: string;
  name: string;
  settings: ConnectionSettings;
  secretSealed: string | null;
  /** The organization's members sign in through it only. */
  required: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type NewConnection = Omit<StoredConnection, 'id' | 'createdAt' | 'updatedAt'>;
export type ConnectionChange = Partial<Pick<StoredConnection, 'name' | 'settings' | 'secretSealed' | 'required'>>;

/** A connection with the public id of its organization. */
export interface ConnectionOf { connection: StoredConnection; organizationId: string }

/** The organizations' enterprise connections. */
export interface ConnectionStore {
  insert(connection: NewConnection, now: Date, tx: Tx): Promise<StoredConnection>;
  find(applicationId: number, publicId: string, tx?: Tx): Promise<StoredConnection | undefined>;
  /** An organization's connections, oldest first. */
  listOf(organizationKey: number, tx?: Tx): Promise<StoredConnection[]>;
  /** The application's connections, with their organizations, oldest first (at most `limit`). */
  listOfApplication(applicationId: number, limit: number): Promise<ConnectionOf[]>;
  /** The connections of the organizations whose claim of `domain` the application verified (home-realm discovery), oldest first. */
  findByDomain(applicationId: number, domain: string): Promise<ConnectionOf[]>;
  /** Whether the application's organizations have connections at all, and whether any of them requires its connection. */
  summary(applicationId: number): Promise<{ connections: boolean; required: boolean }>;
  /** The required connections of the organizations the account is a member of. */
  findRequired(applicationId: number, entityId: number): Promise<ConnectionOf[]>;
  update(applicationId: number, publicId: string, change: ConnectionChange, now: Date, tx: Tx): Promise<boolean>;
  remove(applicationId: number, publicId: string, tx: Tx): Promise<boolean>;
}
