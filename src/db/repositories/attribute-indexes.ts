import { BUILD_DELAY_MS, DEFINITIONS_TTL_MS, IndexBuildRaced, indexedValue, sameIndexed, type IndexedAttribute, type IndexedValue } from '../../domain/indexed-attributes';
import type { Transact, Tx } from '../../domain/storage/transactions';
import { asDate } from '../models';
import type { Sql } from '../sql';

/**
 * Indexed attributes in SQL (docs/entity-filters.md#indexed-attributes): the declared attributes
 * of each application (`indexed_attributes`) and each record's value of each (`attribute_values`),
 * kept by every write of a record in its transaction and searched by /entity.find.
 *
 * Writers read the declarations through a cache of DEFINITIONS_TTL_MS: an attribute declared on
 * another pod is kept by this one at most that long later, so its build (the existing records'
 * values) starts BUILD_DELAY_MS after the declaration, by when every writer keeps it.
 */

export interface Definition { id: number; name: string; state: IndexedAttribute['state'] }
interface DefinitionRow { id: number | string; application_id: number | string; name: string; state: string; built_to: number | string; created_at: Date | string; ready_at: Date | string | null; removed_at: Date | string | null }

/** The statement that writes one record's value of one attribute (only while the attribute is declared). */
function upsert(sql: Sql): string {
  return sql.dialect === 'mysql'
    ? `INSERT INTO attribute_values (attribute_id, entity_id, kind, text_value, number_value) SELECT id, ?, ?, ?, ? FROM indexed_attributes WHERE id = ?
       ON DUPLICATE KEY UPDATE kind = VALUES(kind), text_value = VALUES(text_value), number_value = VALUES(number_value)`
    : `INSERT INTO attribute_values (attribute_id, entity_id, kind, text_value, number_value) SELECT id, ?, ?, ?, ? FROM indexed_attributes WHERE id = ?
       ON CONFLICT (attribute_id, entity_id) DO UPDATE SET kind = excluded.kind, text_value = excluded.text_value, number_value = excluded.number_value`;
}
const valuesOf = (entityId: number, v: IndexedValue, attributeId: number) => [entityId, v.kind, v.text, v.number, attributeId];
const stateOf = (state: string): IndexedAttribute['state'] => (state === 'ready' || state === 'removing' ? state : 'building');

/** What the records' writes and searches need: the declarations (cached) and the upkeep of a record's values. */
export function createIndexedValues(sql: Sql) {
  const cache = new Map<number, { at: number; definitions: Promise<Definition[]> }>();
  const read = (applicationId: number, tx?: Tx) => sql.select<DefinitionRow>('SELECT id, name, state FROM indexed_attributes WHERE application_id = ? ORDER BY id', [applicationId], tx)
    .then((rows) => rows.map((r) => ({ id: Number(r.id), name: r.name, state: stateOf(r.state) })));
  const statement = upsert(sql);

  return {
    /** The application's declared attributes, building, ready or being removed (cached for DEFINITIONS_TTL_MS; read in `tx` when it is not). */
    definitions(applicationId: number, tx?: Tx): Promise<Definition[]> {
      const hit = cache.get(applicationId);
      if (hit && Date.now() - hit.at < DEFINITIONS_TTL_MS) return hit.definitions;
      const definitions = read(applicationId, tx);
      cache.set(applicationId, { at: Date.now(), definitions });
      definitions.catch(() => cache.delete(applicationId));
      return definitions;
    },

    /** Forgets an application's declarations (this pod changed them). */
    forget(applicationId: number): void {
      cache.delete(applicationId);
    },

    /**
     * Keeps record `entityId`'s values in `tx` after a write: `before` its attributes as they were
     * (null: a new record), `after` as written. Only the values that changed are written.
     */
    async keep(applicationId: number, entityId: number, before: Record<string, unknown> | null, after: Record<string, unknown>, tx?: Tx): Promise<void> {
      const definitions = await this.definitions(applicationId, tx);
      // (an index being removed is no longer kept: its values are being deleted)
      for (const d of definitions.filter((x) => x.state !== 'removing')) {
        const value = indexedValue(after, d.name);
        if (before !== null && sameIndexed(indexedValue(before, d.name), value)) continue;
        await sql.change(statement, valuesOf(entityId, value, d.id), tx);
      }
    },

    /** Whether a write from `before` to `after` changes a value an index keeps (the sign-in's stored procedure does not keep them). */
    async changes(applicationId: number, before: Record<string, unknown>, after: Record<string, unknown>): Promise<boolean> {
      const definitions = (await this.definitions(applicationId)).filter((d) => d.state !== 'removing');
      return definitions.some((d) => !sameIndexed(indexedValue(before, d.name), indexedValue(after, d.name)));
    },
  };
}
export type IndexedValues = ReturnType<typeof createIndexedValues>;

/** The declarations' store: declare, remove, list, and build in batches. */
export function createAttributeIndexQueries(sql: Sql, values: IndexedValues, transaction: Transact) {
  const t = sql.time;
  const statement = upsert(sql);
  const toAttribute = (r: DefinitionRow): IndexedAttribute => ({
    name: r.name, state: stateOf(r.state), created: asDate(r.created_at), ready: r.ready_at === null ? null : asDate(r.ready_at),
  });

  return {
    /** The application's indexed attributes, oldest first. */
    async list(applicationId: number, tx?: Tx): Promise<IndexedAttribute[]> {
      const rows = await sql.select<DefinitionRow>('SELECT * FROM indexed_attributes WHERE application_id = ? ORDER BY id', [applicationId], tx);
      return rows.map(toAttribute);
    },

    /**
     * Declares `name` indexed (building), unless it is already (`exists`), its index is still
     * being removed (`removing`), or the application has `max` (`full`). The application's
     * declarations are locked meanwhile: two declarations at once are one after the other.
     */
    async declare(applicationId: number, name: string, max: number, now: Date, tx: Tx): Promise<'declared' | 'exists' | 'removing' | 'full'> {
      const declared = await sql.select<{ name: string; state: string }>(`SELECT name, state FROM indexed_attributes WHERE application_id = ?${sql.forUpdate}`, [applicationId], tx);
      const same = declared.find((d) => d.name === name);
      if (same) return same.state === 'removing' ? 'removing' : 'exists';
      if (declared.length >= max) return 'full';
      await sql.change("INSERT INTO indexed_attributes (application_id, name, state, built_to, created_at) VALUES (?, ?, 'building', 0, ?)", [applicationId, name, t(now)], tx);
      values.forget(applicationId);
      return 'declared';
    },

    /**
     * Removes `name`'s index: searches stop using it at once (on every pod within the cache's
     * life), and the maintenance worker deletes its values in batches once no pod uses it; false
     * when it was not indexed (or is being removed).
     */
    async remove(applicationId: number, name: string, now: Date, tx: Tx): Promise<boolean> {
      const removed = await sql.change("UPDATE indexed_attributes SET state = 'removing', removed_at = ? WHERE application_id = ? AND name = ? AND state <> 'removing'", [t(now), applicationId, name], tx);
      values.forget(applicationId);
      return removed > 0;
    },

    /**
     * One batch of upkeep, in a short transaction of its own (READ COMMITTED: its locks are the
     * rows it reads, never a range): the values of up to `limit` records of an index removed long
     * enough ago (BUILD_DELAY_MS) deleted, the index itself once none is left; else the values of
     * up to `limit` more existing records added to the oldest index being built (declared at least
     * BUILD_DELAY_MS ago), read under a shared lock so that a write of one of them waits, then
     * writes its newer value; ready once no record is left. Undefined when there is nothing to do.
     * IndexBuildRaced when another worker built the same batch meanwhile (nothing is written).
     */
    async buildAlone(limit: number, now: Date): Promise<{ name: string; applicationId: number; records: number; ready: boolean; removed: boolean } | undefined> {
      const ago = t(new Date(now.getTime() - BUILD_DELAY_MS));
      return transaction(async (tx) => {
        const [gone] = await sql.select<DefinitionRow>("SELECT * FROM indexed_attributes WHERE state = 'removing' AND removed_at <= ? ORDER BY id LIMIT 1", [ago], tx);
        if (gone) {
          const ids = await sql.select<{ entity_id: number | string }>('SELECT entity_id FROM attribute_values WHERE attribute_id = ? LIMIT ?', [gone.id, limit], tx);
          if (ids.length > 0) {
            await sql.change(`DELETE FROM attribute_values WHERE attribute_id = ? AND entity_id IN (${ids.map(() => '?').join(', ')})`, [gone.id, ...ids.map((r) => r.entity_id)], tx);
          }
          const removed = ids.length < limit;
          if (removed) await sql.change("DELETE FROM indexed_attributes WHERE id = ? AND state = 'removing'", [gone.id], tx);
          return { name: gone.name, applicationId: Number(gone.application_id), records: ids.length, ready: false, removed };
        }
        const [d] = await sql.select<DefinitionRow>("SELECT * FROM indexed_attributes WHERE state = 'building' AND created_at <= ? ORDER BY id LIMIT 1", [ago], tx);
        if (!d) return undefined;
        const applicationId = Number(d.application_id);
        const records = await sql.select<{ id: number | string; attributes: string }>(
          `SELECT id, attributes FROM entities WHERE application_id = ? AND id > ? ORDER BY id LIMIT ?${sql.dialect === 'mysql' ? ' LOCK IN SHARE MODE' : ''}`,
          [applicationId, Number(d.built_to), limit], tx,
        );
        for (let i = 0; i < records.length; i += 100) {
          const chunk = records.slice(i, i + 100);
          const rows = chunk.map((r) => valuesOf(Number(r.id), indexedValue(JSON.parse(r.attributes) as Record<string, unknown>, d.name), Number(d.id)));
          // one statement per chunk: the values of records written meanwhile are kept by their writers (and win: this reads under a lock)
          if (sql.dialect === 'mysql') {
            await sql.change(`INSERT INTO attribute_values (entity_id, kind, text_value, number_value, attribute_id) VALUES ${rows.map(() => '(?, ?, ?, ?, ?)').join(', ')}
              ON DUPLICATE KEY UPDATE kind = VALUES(kind), text_value = VALUES(text_value), number_value = VALUES(number_value)`, rows.flat(), tx);
          } else {
            for (const row of rows) await sql.change(statement, row, tx);
          }
        }
        const ready = records.length < limit;
        // moved on only from where this batch began: another worker's batch of the same records makes this one roll back
        const moved = await sql.change("UPDATE indexed_attributes SET built_to = ?, state = ?, ready_at = ? WHERE id = ? AND built_to = ? AND state = 'building'", [
          records.length > 0 ? Number(records[records.length - 1].id) : Number(d.built_to), ready ? 'ready' : 'building', ready ? t(now) : null, d.id, Number(d.built_to),
        ], tx);
        if (moved !== 1) throw new IndexBuildRaced(d.name);
        if (ready) values.forget(applicationId);
        return { name: d.name, applicationId, records: records.length, ready, removed: false };
      }, { readCommitted: true });
    },
  };
}
export type AttributeIndexQueries = ReturnType<typeof createAttributeIndexQueries>;
