import type { IndexedAttribute } from '../indexed-attributes';
import type { Tx } from './transactions';

/**
 * The attributes an operator indexed (docs/entity-filters.md#indexed-attributes). The records'
 * writes keep each record's values in their own transaction; a declared attribute is built (the
 * existing records' values added) in batches, then searches use it.
 */
export interface AttributeIndexStore {
  /** The application's indexed attributes, oldest first. */
  list(applicationId: number, tx?: Tx): Promise<IndexedAttribute[]>;
  /** Declares `name` indexed, to be built; false when it is already. */
  declare(applicationId: number, name: string, now: Date, tx: Tx): Promise<boolean>;
  /** Removes `name`'s index and every value it kept; false when it was not indexed. */
  remove(applicationId: number, name: string, tx: Tx): Promise<boolean>;
  /**
   * In one transaction of its own: the values of up to `limit` more existing records added to the
   * oldest index being built (declared long enough ago that every writer keeps it); ready once none
   * is left. Undefined when nothing is being built.
   */
  buildAlone(limit: number, now: Date): Promise<{ name: string; applicationId: number; records: number; ready: boolean } | undefined>;
}
