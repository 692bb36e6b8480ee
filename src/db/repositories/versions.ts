import { snapshotPayloadOf } from '../../domain/payloads';
import type { Models } from '../models';
import { asDate } from '../models';
import type { Sql } from '../sql';
import { TOMBSTONE_JOB, type Snapshot, type SnapshotPayload } from '../../domain/storage/versions';
import type { Transact, Tx } from '../../domain/storage/transactions';

interface OutboxSnapshotRow { id: string; application_id: number | string; payload: string }

/** Later (time, then version) wins: versions follow commit order, times never go back (see entities `changed`). */
const later = (a: Snapshot, b: Snapshot) =>
  (a.validFrom.getTime() !== b.validFrom.getTime() ? a.validFrom > b.validFrom : a.version > b.version) ? a : b;

const fromPayload = (payload: SnapshotPayload): Snapshot => ({ version: payload.version, validFrom: new Date(payload.validFrom), snapshot: payload.snapshot });

/**
 * The versions' store (VersionStore of the storage contract) in SQL. Long as a list, not as
 * logic: one short method per method of the contract, sharing the closure's time conversions.
 */
export function createVersionQueries(_models: Models, sql: Sql, transaction?: Transact) {
  // READ COMMITTED: a batch's locks cover its rows, not the index gaps where api pods insert new rows
  const transact = <T>(work: (tx: Tx) => Promise<T>) => {
    if (!transaction) throw new Error('the versions worker writes through the primary');
    return transaction(work, { readCommitted: true });
  };
  const t = sql.time;
  const mysql = sql.dialect === 'mysql';

  /** Records outbox snapshot rows into entity_versions in `tx`; a row recorded before is left as it is. */
  async function record(rows: OutboxSnapshotRow[], now: Date, tx: Tx): Promise<void> {
    if (rows.length === 0) return;
    const values = rows.map((row) => {
      const p = snapshotPayloadOf(row.payload);
      return [
        Number(row.application_id), p.entityId, t(new Date(p.validFrom)), p.version, p.snapshot === null ? 1 : 0,
        p.snapshot === null ? p.uuid : null, JSON.stringify(p.snapshot),
      ];
    });
    await sql.change(
      `INSERT INTO entity_versions (application_id, entity_id, valid_from, version, deleted, entity_uuid, snapshot)
       VALUES ${values.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ${mysql ? 'ON DUPLICATE KEY UPDATE id = id' : 'ON CONFLICT DO NOTHING'}`,
      values.flat(),
      tx,
    );
    // the snapshot now lives in entity_versions: the finished row keeps no copy of the record
    await sql.change(
      `UPDATE outbox SET status = 'done', payload = '{}', updated_at = ? WHERE id IN (${rows.map(() => '?').join(', ')}) AND status = 'pending'`,
      [t(now), ...rows.map((r) => r.id)],
      tx,
    );
  }

  return {
    /**
     * Records pending snapshot rows in one transaction: the row `ownId` (the job's own) and up to
     * `limit - 1` others, oldest first. Other rows another transaction holds are skipped (MySQL SKIP
     * LOCKED), never waited for; the own row is waited for (held by nobody but a batch that never
     * waits, the wait is short). `own` is false when the job's own row is no longer pending
     * (recorded by an earlier attempt or by another worker's batch).
     */
    async drainAlone(ownId: string | undefined, limit: number, now: Date): Promise<{ own: boolean; recorded: number }> {
      const lock = mysql ? ' FOR UPDATE SKIP LOCKED' : '';
      return transact(async (tx) => {
        // the job's own row waits for its lock rather than skipping it: another transaction holding it
        // (another batch, or a statement of another queue that locked more rows than it changes) may
        // leave it pending, and a job that finished without it is not run again (its id is taken)
        const own = ownId === undefined ? [] : await sql.select<OutboxSnapshotRow>(
          `SELECT id, application_id, payload FROM outbox WHERE id = ? AND queue = 'versions' AND status = 'pending'${mysql ? ' FOR UPDATE' : ''}`, [ownId], tx,
        );
        if (ownId !== undefined && own.length === 0) return { own: false, recorded: 0 };
        const others = await sql.select<OutboxSnapshotRow>(
          `SELECT id, application_id, payload FROM outbox WHERE status = 'pending' AND queue = 'versions' AND id <> ? ORDER BY created_at LIMIT ?${lock}`,
          [ownId ?? '', limit - own.length], tx,
        );
        const rows = [...own, ...others];
        await record(rows, now, tx);
        return { own: ownId !== undefined, recorded: rows.length };
      });
    },

    /** Records one outbox row alone (a batch that failed is retried row by row, so one bad row holds up no other). */
    async recordOneAlone(id: string, now: Date): Promise<boolean> {
      return transact(async (tx) => {
        const rows = await sql.select<OutboxSnapshotRow>(
          `SELECT id, application_id, payload FROM outbox WHERE id = ? AND queue = 'versions' AND status = 'pending'${mysql ? ' FOR UPDATE' : ''}`, [id], tx,
        );
        await record(rows, now, tx);
        return rows.length === 1;
      });
    },

    /**
     * The record's snapshot at `at`: the latest recorded at or before it, and the snapshots of
     * changes committed but not yet recorded (outbox rows not done), read in one statement so that
     * a row the worker records meanwhile is seen in exactly one of the two places.
     */
    async at(applicationId: number, entityId: number, at: Date): Promise<Snapshot | undefined> {
      const rows = await sql.select<{ version: number | null; valid_from: Date | string | null; snapshot: string | null; payload: string | null }>(
        `SELECT version, valid_from, snapshot, NULL AS payload FROM (
           SELECT version, valid_from, snapshot FROM entity_versions
           WHERE entity_id = ? AND application_id = ? AND valid_from <= ?
           ORDER BY valid_from DESC, version DESC LIMIT 1) recorded
         UNION ALL
         SELECT NULL, NULL, NULL, payload FROM outbox WHERE entity_id = ? AND application_id = ? AND queue = 'versions' AND status <> 'done'`,
        [entityId, applicationId, t(at), entityId, applicationId],
      );
      let best: Snapshot | undefined;
      for (const row of rows) {
        const candidate = row.payload === null
          ? { version: Number(row.version), validFrom: asDate(row.valid_from!), snapshot: JSON.parse(row.snapshot!) as Snapshot['snapshot'] }
          : fromPayload(snapshotPayloadOf(row.payload));
        if (candidate.validFrom > at) continue;
        best = best ? later(best, candidate) : candidate;
      }
      return best;
    },

    /**
     * Every snapshot of the record, oldest first: those recorded and those of changes committed but
     * not yet recorded, read in one statement (a row the worker records meanwhile is in one place).
     */
    async history(applicationId: number, entityId: number, limit?: number): Promise<Snapshot[]> {
      // the newest `limit` recorded (and every pending one: few, a worker's backlog)
      const newest = limit === undefined ? '' : ` ORDER BY valid_from DESC, version DESC LIMIT ${Math.max(1, Math.floor(limit))}`;
      const rows = await sql.select<{ version: number | null; valid_from: Date | string | null; snapshot: string | null; payload: string | null }>(
        `SELECT version, valid_from, snapshot, NULL AS payload FROM (
           SELECT version, valid_from, snapshot FROM entity_versions WHERE entity_id = ? AND application_id = ?${newest}) recorded
         UNION ALL
         SELECT NULL, NULL, NULL, payload FROM outbox WHERE entity_id = ? AND application_id = ? AND queue = 'versions' AND status <> 'done'`,
        [entityId, applicationId, entityId, applicationId],
      );
      const all = rows.map((row) => (row.payload === null
        ? { version: Number(row.version), validFrom: asDate(row.valid_from!), snapshot: JSON.parse(row.snapshot!) as Snapshot['snapshot'] }
        : fromPayload(snapshotPayloadOf(row.payload))));
      const sorted = all.sort((a, b) => a.validFrom.getTime() - b.validFrom.getTime() || a.version - b.version);
      return limit === undefined ? sorted : sorted.slice(-limit);
    },

    /**
     * The id of a record by its uuid once it is deleted: from its tombstone, recorded or still
     * pending (pending tombstones are few: deletions whose job has not run yet).
     */
    async deletedEntityId(applicationId: number, uuid: string): Promise<number | undefined> {
      const recorded = await sql.select<{ entity_id: number | string }>(
        'SELECT entity_id FROM entity_versions WHERE entity_uuid = ? AND application_id = ? LIMIT 1', [uuid, applicationId],
      );
      if (recorded[0]) return Number(recorded[0].entity_id);
      const pending = await sql.select<{ payload: string }>(
        `SELECT payload FROM outbox WHERE status <> 'done' AND queue = 'versions' AND name = '${TOMBSTONE_JOB}' AND application_id = ?`, [applicationId],
      );
      const found = pending.map((r) => snapshotPayloadOf(r.payload)).find((p) => p.uuid === uuid);
      return found?.entityId;
    },

    /**
     * Deletes at most `limit` snapshots older than `cutoff` that a newer snapshot, also older than
     * `cutoff`, replaces: the newest one before the cutoff stays, so lookups inside the window still
     * answer. A tombstone older than the cutoff goes too, with everything before it (every lookup
     * inside the window answers "not found" either way). Returns how many rows it deleted.
     */
    async pruneAlone(cutoff: Date, limit: number): Promise<number> {
      const rows = await sql.select<{ id: number | string }>(
        `SELECT v.id FROM entity_versions v
         WHERE v.valid_from < ? AND (v.deleted = 1 OR EXISTS (
           SELECT 1 FROM entity_versions n WHERE n.entity_id = v.entity_id AND n.valid_from < ?
             AND (n.valid_from > v.valid_from OR (n.valid_from = v.valid_from AND n.version > v.version))))
         ORDER BY v.valid_from LIMIT ?`,
        [t(cutoff), t(cutoff), limit],
      );
      if (rows.length === 0) return 0;
      return sql.change(`DELETE FROM entity_versions WHERE id IN (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id));
    },
  };
}
export type VersionQueries = ReturnType<typeof createVersionQueries>;
