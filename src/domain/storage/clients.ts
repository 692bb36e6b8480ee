import type { Tx } from './transactions';

/** A client as stored: the secret is still sealed (see domain/secrets.ts). */
export interface StoredClient {
  id: number;
  applicationId: number;
  clientId: string;
  secretSealed: string;
  description: string;
  features: string[];
  settings: Record<string, string>;
}

export interface ClientStore {
  insert(c: Omit<StoredClient, 'id'>, now: Date, transaction: Tx): Promise<StoredClient>;
  /** Always scoped to the application: another application's client is never found. */
  find(applicationId: number, clientId: string): Promise<StoredClient | undefined>;
  /** By its row id (what credentials record as their client), scoped to the application. */
  findById(applicationId: number, id: number): Promise<StoredClient | undefined>;
  /** The oldest client of any application, or undefined in an empty database. */
  first(): Promise<StoredClient | undefined>;
  list(applicationId: number): Promise<StoredClient[]>;
  /** Read-modify-write of one client under a row lock; undefined when there is none. */
  mutate(
    applicationId: number, clientId: string,
    change: (current: StoredClient) => Partial<Pick<StoredClient, 'features' | 'settings' | 'secretSealed'>>, now: Date, transaction: Tx,
  ): Promise<StoredClient | undefined>;
  remove(applicationId: number, clientId: string, transaction: Tx): Promise<boolean>;
}
