import type { Tx } from './transactions';

export interface StoredFlow { name: string; version: number; checksum: string; definition: unknown }

export interface FlowStore {
  /**
   * Stores a definition as the next version of its name (versions are immutable); a definition
   * the newest version already holds is that version, with `unchanged` set.
   */
  insertNextVersion(applicationId: number, name: string, definition: unknown, checksum: string, now: Date, transaction: Tx): Promise<StoredFlow & { unchanged?: true }>;
  /** The newest version of a flow. */
  latestVersion(applicationId: number, name: string): Promise<number | undefined>;
  find(applicationId: number, name: string, version: number): Promise<StoredFlow | undefined>;
  /** Every flow of the application, by name, with its newest version. */
  listNames(applicationId: number): Promise<{ name: string; latest: number }[]>;
}

