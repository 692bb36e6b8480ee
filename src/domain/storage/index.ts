import type { ApiStore, RoleStore } from './apis';
import type { ApplicationStore } from './applications';
import type { AttributeIndexStore } from './attribute-indexes';
import type { AuditStore } from './audit';
import type { ClientStore } from './clients';
import type { CredentialStore } from './credentials';
import type { ErasureStore } from './erasures';
import type { EventStore } from './events';
import type { ImportStore } from './imports';
import type { WebhookStore } from './webhooks';
import type { LogoutStore } from './logouts';
import type { SamlStore } from './saml';
import type { ConnectionStore } from './connections';
import type { ScimStore } from './scim';
import type { TallyStore } from './tallies';
import type { OrganizationStore } from './organizations';
import type { FactorStore, PasskeyStore } from './factors';
import type { FlowStore } from './flows';
import type { OutboxStore } from './outbox';
import type { RecordStore } from './records';
import type { SocialStore } from './social';
import type { SigningKeyStore } from './signing-keys';
import type { OidcStateStore } from './oidc-state';
import type { Transact } from './transactions';
import type { VersionStore } from './versions';

/**
 * What the domain needs from storage, one store per aggregate, and the one unit of work they
 * share: each method taking a `Tx` joins the transaction `transaction` opened. Implemented once per
 * engine family under src/db (MySQL/MariaDB, SQLite); test/contract holds what every
 * implementation must guarantee.
 */
export interface Storage {
  applications: ApplicationStore;
  clients: ClientStore;
  flows: FlowStore;
  credentials: CredentialStore;
  records: RecordStore;
  social: SocialStore;
  versions: VersionStore;
  outbox: OutboxStore;
  audit: AuditStore;
  /** Every event, in the transaction of its change; an account's failed sign-ins, counted per minute. */
  events: EventStore;
  /** Second factors: an account's TOTP authenticator. */
  factors: FactorStore;
  /** An account's passkeys (WebAuthn credentials). */
  passkeys: PasskeyStore;
  /** Erasures: the tombstones of records whose personal data was removed for good, and that removal. */
  erasures: ErasureStore;
  /** How far each import of a file has come. */
  imports: ImportStore;
  /** The applications' webhook endpoints. */
  webhooks: WebhookStore;
  /** The logout tokens owed to clients with a back-channel logout address. */
  logouts: LogoutStore;
  /** The applications' organizations: members and their roles, defined roles, invitations, claimed domains. */
  organizations: OrganizationStore;
  /** The applications' SAML service providers. */
  saml: SamlStore;
  /** The applications' APIs (resource servers). */
  apis: ApiStore;
  /** The applications' roles (scopes of their APIs) and the accounts holding them. */
  roles: RoleStore;
  /** The organizations' enterprise connections (their own identity providers). */
  connections: ConnectionStore;
  scim: ScimStore;
  /** What the console's overview counts per application and day, tallied from the kept events. */
  tallies: TallyStore;
  /** The attributes operators indexed for /entity.find. */
  attributeIndexes: AttributeIndexStore;
  /** The OpenID providers' signing keys. */
  signingKeys: SigningKeyStore;
  /** What the OpenID providers keep besides codes and tokens (sessions, interactions, grants). */
  oidcState: OidcStateStore;
  /** The reads that may lag behind the writes: see LagTolerantReads. */
  lagTolerant: LagTolerantReads;
  /** Runs `work` in one transaction: all of it commits or none of it does. */
  transaction: Transact;
  /** Answers when the database answers a statement (readiness); throws when it does not. */
  ping(): Promise<void>;
}

/**
 * Every read that may be answered from a replica (DATABASE_READ_URL), named here and nowhere else
 * (docs/scaling.md#read-replicas): each answers what the primary held a moment ago, so only reads
 * whose callers accept that belong here. A flow version is immutable, so its reads are exact (a
 * version the replica does not have yet is read from the primary); the others may miss the last
 * changes: the entity API's searches and counts, the history of a record (`/versions/entity`, a
 * uuid resolved for it included), the list of social login providers and the outbox backlog of
 * the metrics. Everything else — credentials, the sign-in's read, clients (their list shows their
 * secrets, which must be the current ones) and settings, anything read in a transaction,
 * migrations — reads the primary. Without a replica these are the primary's reads.
 */
export interface LagTolerantReads {
  flows: Pick<FlowStore, 'find' | 'latestVersion'>;
  records: Pick<RecordStore, 'searchPage' | 'findByIds' | 'count'>;
  profiles: Pick<SocialStore['profiles'], 'forEntities'>;
  versions: Pick<VersionStore, 'at' | 'deletedEntityId'> & {
    /** A live record's id by its uuid, to look its history up. */
    entityId(applicationId: number, uuid: string): Promise<number | undefined>;
  };
  providers: Pick<SocialStore['providers'], 'list'>;
  outbox: Pick<OutboxStore, 'backlog'>;
}

export type { Transact, TransactionOptions, Tx } from './transactions';
