declare const opened: unique symbol;

/** A bounded statement (a search, a count) ran out of its time and the database stopped it. */
export class StatementTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the statement ran longer than ${timeoutMs} ms and was stopped`);
  }
}

/**
 * An open transaction: a handle the storage layer hands to the work it runs and takes back in
 * each method that joins it. Opaque here; each engine's implementation knows what it holds.
 */
export interface Tx { readonly [opened]: true }

export interface TransactionOptions {
  /**
   * READ COMMITTED instead of the engine's stronger default: an UPDATE then locks only the rows it
   * changes, not the index gaps around them, so it cannot deadlock with concurrent INSERTs into
   * those gaps (the family revocation beside refresh rotations).
   */
  readCommitted?: boolean;
}

/** Runs `work` in one transaction: all of it commits or none of it does. */
export type Transact = <T>(work: (tx: Tx) => Promise<T>, options?: TransactionOptions) => Promise<T>;
