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
  createdAt: Date;
  updatedAt: Date;
}

export type NewApi = Omit<StoredApi, 'id' | 'createdAt' | 'updatedAt'>;

/** What an update may change: its name, scopes, clients' scopes, token lifetime (its identifier names it for good). */
export type ApiChange = Partial<Pick<StoredApi, 'name' | 'scopes' | 'tokenSeconds' | 'clientScopes'>>;

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
