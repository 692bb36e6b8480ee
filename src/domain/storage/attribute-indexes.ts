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
  /** Declares `name` indexed, to be built, with the application's declarations locked: unless it is already, is being removed, or the application has `max`. */
  declare(applicationId: number, name: string, max: number, now: Date, tx: Tx): Promise<'declared' | 'exists' | 'removing' | 'full'>;
  /** Removes `name`'s index: searches stop using it, its values are deleted in batches later; false when it was not indexed. */
  remove(applicationId: number, name: string, now: Date, tx: Tx): Promise<boolean>;
  /**
   * In one transaction of its own: a batch of the values of an index removed long enough ago
   * deleted, else the values of up to `limit` more existing records added to the oldest index being
   * built (declared long enough ago that every writer keeps it); ready once none is left. Undefined
   * when there is nothing to do; IndexBuildRaced when another worker built the same batch.
   */
  buildAlone(limit: number, now: Date): Promise<{ name: string; applicationId: number; records: number; ready: boolean; removed: boolean } | undefined>;
}
