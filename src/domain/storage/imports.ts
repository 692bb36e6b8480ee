import type { Tx } from './transactions';

/** How far an import of a file has come: lines read and records created (docs/import.md#resuming). */
export interface ImportProgress { linesDone: number; created: number }

/**
 * The progress of imports by their key (the file's path, size and time, or the operator's own
 * key), written in the transaction that creates a batch's records: a batch and its progress
 * commit together, so an import killed at any point and started again creates each record once.
 */
export interface ImportStore {
  progress(applicationId: number, key: string, transaction?: Tx): Promise<ImportProgress>;
  /** Moves the import to `linesDone`, having created `created` more records, in the batch's transaction. */
  advance(applicationId: number, key: string, linesDone: number, created: number, now: Date, transaction: Tx): Promise<void>;
}
