import type { Tx } from './transactions';

/** An identity provider as stored; the client secret is still sealed. */
export interface StoredProvider {
  id: number;
  applicationId: number;
  name: string;
  kind: 'oidc' | 'github';
  issuer: string;
  clientId: string;
  secretSealed: string;
  scopes: string[];
}

/** A social identity linked to a record. `data` is the normalized profile (auth_info shape). */
export interface StoredProfile {
  id: number;
  entityId: number;
  provider: string;
  identifier: string;
  data: Record<string, unknown>;
  created: Date;
}

/** The identity is already linked to a record of the application (unique index). */
export class IdentityTakenError extends Error {}

/** Identity providers of an application, and the identities linked to its records. */
export interface SocialStore {
  providers: {
    /** False when the application already has a provider of that name. */
    insert(p: Omit<StoredProvider, 'id'>, now: Date, transaction: Tx): Promise<boolean>;
    list(applicationId: number): Promise<StoredProvider[]>;
    find(applicationId: number, name: string): Promise<StoredProvider | undefined>;
    remove(applicationId: number, name: string, transaction: Tx): Promise<boolean>;
  };
  profiles: {
    /** Links an identity to a record; IdentityTakenError when any record of the application has it. */
    insert(p: { applicationId: number; entityId: number; provider: string; identifier: string; data: Record<string, unknown> }, now: Date, transaction: Tx): Promise<void>;
    /** A record's identities, oldest first; inside a transaction, as that transaction sees them. */
    forEntity(applicationId: number, entityId: number, transaction?: Tx): Promise<StoredProfile[]>;
    /** The identities of many records in one query, by record id. */
    forEntities(applicationId: number, entityIds: number[]): Promise<Map<number, StoredProfile[]>>;
    byIdentifier(applicationId: number, identifier: string): Promise<StoredProfile | undefined>;
    remove(applicationId: number, entityId: number, identifier: string, transaction: Tx): Promise<boolean>;
  };
}
