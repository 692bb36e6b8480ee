import type { NameIdKind } from '../saml/identity-provider';
import type { ServiceProviderDescriptor } from '../saml/metadata';
import type { Tx } from './transactions';

/** A SAML service provider of an application (docs/saml.md#service-providers), as stored. */
export interface StoredServiceProvider {
  id: number;
  applicationId: number;
  /** Its public id (`sp_…`). */
  publicId: string;
  entityId: string;
  name: string;
  /** Its metadata as it was given. */
  metadata: string;
  /** What Gatehouse read of it. */
  descriptor: ServiceProviderDescriptor;
  /** The NameID it gets when its request names none; null: its metadata's first, else persistent. */
  nameIdFormat: NameIdKind | null;
  /** SAML attribute names to the record's attributes; null: the defaults. */
  attributes: Record<string, string> | null;
  /** The key of its persistent NameIDs (hex). */
  persistentSalt: string;
  createdAt: Date;
  updatedAt: Date;
}

export type NewServiceProvider = Omit<StoredServiceProvider, 'id' | 'createdAt' | 'updatedAt'>;

/** What an update may change: its metadata (and so its entity id), name, NameID format, attributes. */
export type ServiceProviderChange = Partial<Pick<StoredServiceProvider, 'entityId' | 'name' | 'metadata' | 'descriptor' | 'nameIdFormat' | 'attributes'>>;

/** Thrown when an application already has a service provider of that entity id. */
export class DuplicateEntityError extends Error {}

/** The applications' SAML service providers: one per entity id and application. */
export interface SamlStore {
  /** Adds one (DuplicateEntityError when its entity id is taken). */
  insert(sp: NewServiceProvider, now: Date, tx: Tx): Promise<StoredServiceProvider>;
  list(applicationId: number): Promise<StoredServiceProvider[]>;
  /** By its public id; locked to the end of `tx` when one is given. */
  find(applicationId: number, publicId: string, tx?: Tx): Promise<StoredServiceProvider | undefined>;
  findByEntity(applicationId: number, entityId: string): Promise<StoredServiceProvider | undefined>;
  /** Changes one (DuplicateEntityError when its new entity id is taken); false when it is gone. */
  update(applicationId: number, publicId: string, change: ServiceProviderChange, now: Date, tx: Tx): Promise<boolean>;
  remove(applicationId: number, publicId: string, tx: Tx): Promise<boolean>;
}
