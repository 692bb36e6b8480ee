import { BUILD_DELAY_MS, DEFINITIONS_TTL_MS, indexedValue, sameIndexed, type IndexedAttribute, type IndexedValue } from '../../domain/indexed-attributes';
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


export interface Definition { id: number; name: string; ready: boolean }
interface DefinitionRow { id: number | string; name: string; state: string; built_to: number | string; created_at: Date | string; ready_at: Date | string | null }

/** The statement that writes one record's value of one attribute (only while the attribute is declared). */
function upsert(sql: Sql): string {
  return sql.dialect === 'mysql'
    ? `INSERT INTO attribute_values (attribute_id, entity_id, kind, text_value, number_value) SELECT id, ?, ?, ?, ? FROM indexed_attributes WHERE id = ?
       ON DUPLICATE KEY UPDATE kind = VALUES(kind), text_value = VALUES(text_value), number_value = VALUES(number_value)`
    : `INSERT INTO attribute_values (attribute_id, entity_id, kind, text_value, number_value) SELECT id, ?, ?, ?, ? FROM indexed_attributes WHERE id = ?
       ON CONFLICT (attribute_id, entity_id) DO UPDATE SET kind = excluded.kind, text_value = excluded.text_value, number_value = excluded.number_value`;
}
const valuesOf = (entityId: number, v: IndexedValue, attributeId: number) => [entityId, v.kind, v.text, v.number, attributeId];

/** What the records' writes and searches need: the declarations (cached) and the upkeep of a record's values. */
export function createIndexedValues(sql: Sql) {
  const cache = new Map<number, { at: number; definitions: Promise<Definition[]> }>();
  const read = (applicationId: number) => sql.select<DefinitionRow>('SELECT id, name, state FROM indexed_attributes WHERE application_id = ? ORDER BY id', [applicationId])
    .then((rows) => rows.map((r) => ({ id: Number(r.id), name: r.name, ready: r.state === 'ready' })));
  const statement = upsert(sql);

  return {
    /** The application's declared attributes, building or ready (cached for DEFINITIONS_TTL_MS). */
    definitions(applicationId: number): Promise<Definition[]> {
      const hit = cache.get(applicationId);
      if (hit && Date.now() - hit.at < DEFINITIONS_TTL_MS) return hit.definitions;
      const definitions = read(applicationId);
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
      const definitions = await this.definitions(applicationId);
      for (const d of definitions) {
        const value = indexedValue(after, d.name);
        if (before !== null && sameIndexed(indexedValue(before, d.name), value)) continue;
        await sql.change(statement, valuesOf(entityId, value, d.id), tx);
      }
    },

    /** Whether a write from `before` to `after` changes a value an index keeps (the sign-in's stored procedure does not keep them). */
    async changes(applicationId: number, before: Record<string, unknown>, after: Record<string, unknown>): Promise<boolean> {
      const definitions = await this.definitions(applicationId);
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
    name: r.name, state: r.state === 'ready' ? 'ready' : 'building', created: asDate(r.created_at), ready: r.ready_at === null ? null : asDate(r.ready_at),
  });

  return {
    /** The application's indexed attributes, oldest first. */
    async list(applicationId: number, tx?: Tx): Promise<IndexedAttribute[]> {
      const rows = await sql.select<DefinitionRow>('SELECT * FROM indexed_attributes WHERE application_id = ? ORDER BY id', [applicationId], tx);
      return rows.map(toAttribute);
    },

    /** Declares `name` indexed (building); false when it is already. */
    async declare(applicationId: number, name: string, now: Date, tx: Tx): Promise<boolean> {
      const taken = await sql.select<{ id: number }>(`SELECT id FROM indexed_attributes WHERE application_id = ? AND name = ?${sql.forUpdate}`, [applicationId, name], tx);
      if (taken.length > 0) return false;
      await sql.change("INSERT INTO indexed_attributes (application_id, name, state, built_to, created_at) VALUES (?, ?, 'building', 0, ?)", [applicationId, name, t(now)], tx);
      values.forget(applicationId);
      return true;
    },

    /** Removes `name`'s index and its values; false when it was not indexed. */
    async remove(applicationId: number, name: string, tx: Tx): Promise<boolean> {
      const removed = await sql.change('DELETE FROM indexed_attributes WHERE application_id = ? AND name = ?', [applicationId, name], tx);
      values.forget(applicationId);
      return removed > 0;
    },

    /**
     * Adds the values of up to `limit` existing records to the oldest index being built (declared
     * at least BUILD_DELAY_MS before `now`), each record locked while it is read, in one short
     * transaction; the index is ready once no record is left. Answers the records done, and the
     * index made ready (if any); undefined when nothing is being built.
     */
    async buildAlone(limit: number, now: Date): Promise<{ name: string; applicationId: number; records: number; ready: boolean } | undefined> {
      return transaction(async (tx) => {
        const [d] = await sql.select<DefinitionRow & { application_id: number | string }>(
          `SELECT * FROM indexed_attributes WHERE state = 'building' AND created_at <= ? ORDER BY id LIMIT 1${sql.forUpdate}`, [t(new Date(now.getTime() - BUILD_DELAY_MS))], tx,
        );
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
        await sql.change(`UPDATE indexed_attributes SET built_to = ?, state = ?, ready_at = ? WHERE id = ?`, [
          records.length > 0 ? Number(records[records.length - 1].id) : Number(d.built_to), ready ? 'ready' : 'building', ready ? t(now) : null, d.id,
        ], tx);
        if (ready) values.forget(applicationId);
        return { name: d.name, applicationId, records: records.length, ready };
      });
    },
  };
}
export type AttributeIndexQueries = ReturnType<typeof createAttributeIndexQueries>;
