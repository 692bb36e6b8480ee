import type { Sql } from '../sql';
import type { ErasureCounts, ErasureStore } from '../../domain/storage/erasures';
import type { Transact, Tx } from '../../domain/storage/transactions';
import { asDate } from '../models';

/** `value` as a JSON string appears in a stored document, quotes included (so `ann@x.com` never matches `joann@x.com`): a LIKE pattern, lower case. */
const jsonPattern = (value: string) => `%${JSON.stringify(value.toLowerCase()).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The erasures' store (ErasureStore of the storage contract) in SQL. */
export function createErasureQueries(sql: Sql, transaction: Transact): ErasureStore {
  const t = sql.time;
  const escape = sql.dialect === 'sqlite' ? " ESCAPE '\\'" : '';
  /** Any of the needles in the (lower-cased) column, or nothing when there are none. */
  const holdsAny = (column: string, needles: readonly string[]) => ({
    clause: needles.length === 0 ? '0 = 1' : `(${needles.map(() => `LOWER(${column}) LIKE ?${escape}`).join(' OR ')})`,
    values: needles.map(jsonPattern),
  });

  async function purge(applicationId: number, entityId: number, needles: readonly string[], keep: string, tx: Tx): Promise<ErasureCounts> {
    const id = entityId;
    // the outbox first: a snapshot row a versions worker holds is waited for, then its snapshot is deleted below
    const payload = holdsAny('payload', needles);
    const outboxRows = await sql.change(
      `DELETE FROM outbox WHERE application_id = ? AND id <> ? AND (entity_id = ?
         OR event_id IN (SELECT uid FROM events WHERE application_id = ? AND account_id = ?)
         OR (queue IN ('mail', 'versions') AND ${payload.clause}))`,
      [applicationId, keep, id, applicationId, id, ...payload.values], tx,
    );
    const snapshots = await sql.change('DELETE FROM entity_versions WHERE application_id = ? AND entity_id = ?', [applicationId, id], tx);
    const events = await sql.change(
      `UPDATE events SET data = '{}', address = NULL, user_agent = NULL
       WHERE application_id = ? AND account_id = ? AND type <> 'account.erased' AND (data <> '{}' OR address IS NOT NULL OR user_agent IS NOT NULL)`,
      [applicationId, id], tx,
    );
    const failures = await sql.change('DELETE FROM sign_in_failures WHERE application_id = ? AND account_id = ?', [applicationId, id], tx);
    const auditEntries = await sql.change(
      `UPDATE audit_log SET data = '{}', address = NULL
       WHERE application_id = ? AND event_type <> 'account.erased' AND (data <> '{}' OR address IS NOT NULL)
         AND ((subject_kind = 'record' AND subject_id = ?) OR (actor_kind = 'account' AND actor_id = ?))`,
      [applicationId, String(id), String(id)], tx,
    );
    const state = holdsAny('payload', needles);
    const oidcState = await sql.change(
      `DELETE FROM oidc_state WHERE application_id = ? AND (entity_id = ? OR ${state.clause})`, [applicationId, id, ...state.values], tx,
    );
    const extra = holdsAny('extra', needles);
    const credentials = await sql.change(
      `DELETE FROM credentials WHERE application_id = ? AND (entity_id = ? OR (entity_id IS NULL AND extra IS NOT NULL AND ${extra.clause}))`,
      [applicationId, id, ...extra.values], tx,
    );
    // what the record's row takes with it (its foreign keys cascade), for a purge that runs again
    for (const table of ['profiles', 'second_factors', 'passkeys']) {
      await sql.change(`DELETE FROM ${table} WHERE application_id = ? AND entity_id = ?`, [applicationId, id], tx);
    }
    return { snapshots, outboxRows, events, failures, auditEntries, oidcState, credentials };
  }

  return {
    async markErased(applicationId, entityId, at, tx) {
      const found = await sql.select<{ n: number }>('SELECT 1 AS n FROM erasures WHERE application_id = ? AND entity_id = ?', [applicationId, entityId], tx);
      if (found.length > 0) return false;
      await sql.change('INSERT INTO erasures (application_id, entity_id, erased_at) VALUES (?, ?, ?)', [applicationId, entityId, t(at)], tx);
      return true;
    },

    async erasedAt(applicationId, entityId) {
      const [row] = await sql.select<{ erased_at: Date | string }>('SELECT erased_at FROM erasures WHERE application_id = ? AND entity_id = ?', [applicationId, entityId]);
      return row ? asDate(row.erased_at) : undefined;
    },

    async namesInHistory(applicationId, entityId, tx) {
      const rows = await sql.select<{ doc: string | null; uuid: string | null }>(
        `SELECT snapshot AS doc, entity_uuid AS uuid FROM entity_versions WHERE application_id = ? AND entity_id = ?
         UNION ALL SELECT payload AS doc, NULL AS uuid FROM outbox WHERE application_id = ? AND entity_id = ? AND queue = 'versions' AND payload <> '{}'`,
        [applicationId, entityId, applicationId, entityId], tx,
      );
      const names = new Set<string>();
      const keep = (v: unknown) => typeof v === 'string' && v !== '' && names.add(v);
      for (const { doc, uuid } of rows) {
        keep(uuid);
        const parsed = doc ? JSON.parse(doc) as Record<string, unknown> | null : null;
        // a pending row is a payload (its uuid beside the snapshot), a recorded one the snapshot itself (a tombstone's is null)
        if (parsed && 'validFrom' in parsed) keep(parsed.uuid);
        const record = (parsed && 'validFrom' in parsed ? parsed.snapshot : parsed) as Record<string, unknown> | null;
        for (const key of ['uuid', 'email', 'username']) keep(record?.[key]);
        // the identities it had linked
        if (Array.isArray(record?.profiles)) for (const p of record.profiles as Array<Record<string, unknown>>) keep(p?.identifier);
      }
      return [...names];
    },

    purge,
    purgeAlone: (applicationId, entityId, needles, keep) => transaction((tx) => purge(applicationId, entityId, needles, keep, tx)),
  };
}
