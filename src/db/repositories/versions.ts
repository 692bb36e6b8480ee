import { snapshotPayloadOf } from '../../domain/payloads';
import type { Models } from '../models';
import { asDate } from '../models';
import type { Sql } from '../sql';
import { TOMBSTONE_JOB, type Snapshot, type SnapshotPayload } from '../../domain/storage/versions';
import { RUN_LIMIT, extendsRun, lastOf, runEntry, runOffsets, versionAt, versionsOf, type StoredRun } from '../../domain/sign-in-runs';
import type { Transact, Tx } from '../../domain/storage/transactions';

interface OutboxSnapshotRow { id: string; application_id: number | string; payload: string }
interface VersionRow { id: number | string; entity_id: number | string; version: number | string; valid_from: Date | string; snapshot: string; sign_ins: string | null }
/** A row of entity_versions or of the outbox, as the lookups read them in one statement. */
type LookupRow = { version: number | null; valid_from: Date | string | null; snapshot: string | null; sign_ins: string | null; payload: string | null };

/** A stored row as the run it holds (docs/versions.md#compact-history). */
const storedRun = (row: { version: number | string | null; valid_from: Date | string | null; snapshot: string | null; sign_ins: string | null }): StoredRun => ({
  version: Number(row.version), validFrom: asDate(row.valid_from!), snapshot: JSON.parse(row.snapshot!) as StoredRun['snapshot'], signIns: row.sign_ins,
});
/** A new row: a version stored whole, and the sign-ins of the same batch that follow it. */
interface NewRow extends StoredRun { applicationId: number; entityId: number; uuid: string }
/** The newest stored row of a record, and whether this batch appended to its run (`was`: its run as read). */
interface Latest extends StoredRun { id: number; was: string | null }

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

  /** The newest stored row of each record (in chunks: SQLite allows 500 terms to a compound SELECT). */
  async function newestRows(entityIds: number[], tx: Tx): Promise<Map<number, Latest>> {
    const found = new Map<number, Latest>();
    for (let i = 0; i < entityIds.length; i += 100) {
      const chunk = entityIds.slice(i, i + 100);
      const rows = await sql.select<VersionRow>(chunk.map((_, n) => `SELECT * FROM (SELECT id, entity_id, version, valid_from, snapshot, sign_ins FROM entity_versions
        WHERE entity_id = ? ORDER BY valid_from DESC, version DESC LIMIT 1) newest${n}`).join(' UNION ALL '), chunk, tx);
      for (const row of rows) found.set(Number(row.entity_id), { ...storedRun(row), id: Number(row.id), was: row.sign_ins });
    }
    return found;
  }

  /**
   * Records outbox snapshot rows into entity_versions in `tx` (docs/versions.md#compact-history):
   * a sign-in after a record's newest version is appended to that version's run, anything else
   * is stored whole; a version recorded before is left as it is. The run of a row already stored
   * is rewritten only if it is still as read (another worker appending to it meanwhile makes this
   * throw: the batch rolls back and is recorded again).
   */
  async function record(rows: OutboxSnapshotRow[], now: Date, tx: Tx): Promise<void> {
    if (rows.length === 0) return;
    const byRecord = new Map<number, { applicationId: number; p: SnapshotPayload }[]>();
    for (const row of rows) {
      const p = snapshotPayloadOf(row.payload);
      byRecord.set(p.entityId, [...(byRecord.get(p.entityId) ?? []), { applicationId: Number(row.application_id), p }]);
    }
    const newest = await newestRows([...byRecord.keys()], tx);
    const added: NewRow[] = [];
    const appended: Latest[] = [];
    for (const [entityId, list] of byRecord) {
      const stored = newest.get(entityId);
      let current: StoredRun | undefined = stored;
      for (const { applicationId, p } of list.sort((a, b) => a.p.version - b.p.version)) {
        const validFrom = new Date(p.validFrom);
        const last = current && lastOf(current);
        // the newest stored version or one of its run: recorded already
        if (current && last && p.version >= current.version && p.version <= last.version) continue;
        if (current && p.snapshot !== null && extendsRun(current, { version: p.version, validFrom, serialized: JSON.stringify(p.snapshot) })) {
          current.signIns = (current.signIns ?? '') + runEntry(validFrom.getTime() - current.validFrom.getTime());
          if (current === stored && !appended.includes(stored)) appended.push(stored);
          continue;
        }
        const row: NewRow = { applicationId, entityId, uuid: p.uuid, version: p.version, validFrom, snapshot: p.snapshot, signIns: null };
        added.push(row);
        // (a version older than the newest, recorded late, is stored on its own)
        if (!last || p.version > last.version) current = row;
      }
    }
    for (const row of appended) {
      const same = await sql.change(`UPDATE entity_versions SET sign_ins = ? WHERE id = ? AND ${mysql ? 'sign_ins <=> ?' : 'sign_ins IS ?'}`, [row.signIns, row.id, row.was], tx);
      if (same !== 1) throw new Error(`the run of stored version ${row.id} changed meanwhile (another worker, or the conversion); recording again`);
    }
    if (added.length > 0) {
      await sql.change(
        `INSERT INTO entity_versions (application_id, entity_id, valid_from, version, deleted, entity_uuid, snapshot, sign_ins)
         VALUES ${added.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
         ${mysql ? 'ON DUPLICATE KEY UPDATE id = id' : 'ON CONFLICT DO NOTHING'}`,
        added.flatMap((r) => [
          r.applicationId, r.entityId, t(r.validFrom), r.version, r.snapshot === null ? 1 : 0, r.snapshot === null ? r.uuid : null, JSON.stringify(r.snapshot), r.signIns,
        ]),
        tx,
      );
    }
    // the snapshot now lives in entity_versions: the finished row keeps no copy of the record
    await sql.change(
      `UPDATE outbox SET status = 'done', payload = '{}', updated_at = ? WHERE id IN (${rows.map(() => '?').join(', ')}) AND status = 'pending'`,
      [t(now), ...rows.map((r) => r.id)],
      tx,
    );
  }

  /**
   * Merges, in rows read in version order (locked in `tx`), each version that is a sign-in after
   * the run before it into that run: the run's new text by row id, and the ids of the rows merged.
   */
  function merged(rows: VersionRow[]): { runs: Map<number, string | null>; gone: number[] } {
    const runs = new Map<number, string | null>();
    const gone: number[] = [];
    let current: (StoredRun & { id: number; entityId: number }) | undefined;
    for (const row of rows) {
      const next = { ...storedRun(row), id: Number(row.id), entityId: Number(row.entity_id) };
      const own = runOffsets(next.signIns);
      const fits = current !== undefined && current.entityId === next.entityId && runOffsets(current.signIns).length + 1 + own.length <= RUN_LIMIT
        && extendsRun(current, { version: next.version, validFrom: next.validFrom, serialized: JSON.stringify(next.snapshot) });
      if (!fits || !current) {
        current = next;
        continue;
      }
      const shift = next.validFrom.getTime() - current.validFrom.getTime();
      current.signIns = (current.signIns ?? '') + runEntry(shift) + own.map((o) => runEntry(o + shift)).join('');
      runs.set(current.id, current.signIns);
      gone.push(next.id);
    }
    return { runs, gone };
  }

  /** Rewrites the merged runs and deletes the rows merged into them; answers how many went. */
  async function write(result: { runs: Map<number, string | null>; gone: number[] }, tx: Tx): Promise<number> {
    for (const [id, run] of result.runs) await sql.change('UPDATE entity_versions SET sign_ins = ? WHERE id = ?', [run, id], tx);
    if (result.gone.length === 0) return 0;
    return sql.change(`DELETE FROM entity_versions WHERE id IN (${result.gone.map(() => '?').join(', ')})`, result.gone, tx);
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
      const rows = await sql.select<LookupRow>(
        `SELECT version, valid_from, snapshot, sign_ins, NULL AS payload FROM (
           SELECT version, valid_from, snapshot, sign_ins FROM entity_versions
           WHERE entity_id = ? AND application_id = ? AND valid_from <= ?
           ORDER BY valid_from DESC, version DESC LIMIT 1) recorded
         UNION ALL
         SELECT NULL, NULL, NULL, NULL, payload FROM outbox WHERE entity_id = ? AND application_id = ? AND queue = 'versions' AND status <> 'done'`,
        [entityId, applicationId, t(at), entityId, applicationId],
      );
      let best: Snapshot | undefined;
      for (const row of rows) {
        // a stored row answers with the version of its run in force at `at`
        const candidate = row.payload === null ? versionAt(storedRun(row), at) : fromPayload(snapshotPayloadOf(row.payload));
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
      const rows = await sql.select<LookupRow>(
        `SELECT version, valid_from, snapshot, sign_ins, NULL AS payload FROM (
           SELECT version, valid_from, snapshot, sign_ins FROM entity_versions WHERE entity_id = ? AND application_id = ?${newest}) recorded
         UNION ALL
         SELECT NULL, NULL, NULL, NULL, payload FROM outbox WHERE entity_id = ? AND application_id = ? AND queue = 'versions' AND status <> 'done'`,
        [entityId, applicationId, entityId, applicationId],
      );
      // (the newest `limit` rows hold at least the newest `limit` versions: a row holds one or more;
      // only the newest rows that hold them are expanded, never a thousand runs of 256)
      type Read = { stored: StoredRun; pending?: undefined } | { stored?: undefined; pending: Snapshot };
      const read: Read[] = rows.map((row) => (row.payload === null ? { stored: storedRun(row) } : { pending: fromPayload(snapshotPayloadOf(row.payload)) }));
      const at = (r: Read) => r.stored ?? r.pending!;
      read.sort((a, b) => at(b).validFrom.getTime() - at(a).validFrom.getTime() || at(b).version - at(a).version);
      const needed: Read[] = [];
      for (let held = 0; held < (limit ?? Infinity) && needed.length < read.length;) {
        const r = read[needed.length];
        needed.push(r);
        held += r.stored ? 1 + runOffsets(r.stored.signIns).length : 1;
      }
      const all = needed.flatMap((r) => (r.stored ? versionsOf(r.stored) : [r.pending!]));
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
     * Converts history kept one row per sign-in (before compact history) into runs, from where the
     * last call stopped, in one transaction of about `limit` rows: the whole records among the next
     * `limit` rows after the mark (upkeep_marks `history`), or, for a record with more rows than
     * that, its next window of `limit` rows (upkeep_marks `history-run`: the run the last window
     * ended with). Answers the rows it merged away, or -1 once every record was converted.
     */
    async compactAlone(limit: number): Promise<number> {
      const size = Math.max(2, limit);
      const columns = 'id, entity_id, version, valid_from, snapshot, sign_ins';
      return transact(async (tx) => {
        // (the marks' lock also keeps pruneAlone from deleting a row this merges into, on one server;
        // across Galera nodes pruneAlone's own row locks do)
        const marks = await sql.select<{ name: string; position: number | string }>(
          `SELECT name, position FROM upkeep_marks WHERE name IN ('history', 'history-run') ORDER BY name${sql.forUpdate}`, [], tx,
        );
        const after = Number(marks.find((m) => m.name === 'history')?.position ?? -1);
        const runId = Number(marks.find((m) => m.name === 'history-run')?.position ?? 0);
        if (after < 0) return -1;
        const mark = (history: number, run: number) => sql.change(
          `UPDATE upkeep_marks SET position = CASE name WHEN 'history' THEN ? ELSE ? END WHERE name IN ('history', 'history-run')`, [history, run], tx,
        );
        /** The next window of a record from the run `from` (the first window: from its first row). */
        const window = async (entityId: number, from: VersionRow | undefined) => {
          const rows = await sql.select<VersionRow>(
            `SELECT ${columns} FROM entity_versions WHERE entity_id = ?${from ? ' AND valid_from >= ?' : ''} ORDER BY valid_from, version LIMIT ?${sql.forUpdate}`,
            from ? [entityId, t(asDate(from.valid_from)), size] : [entityId, size], tx,
          );
          // (a row of the same time as `from` and an earlier version is behind it)
          const ahead = from ? rows.filter((r) => asDate(r.valid_from).getTime() > asDate(from.valid_from).getTime() || Number(r.version) >= Number(from.version)) : rows;
          const result = merged(ahead);
          const gone = await write(result, tx);
          const kept = ahead.filter((r) => !result.gone.includes(Number(r.id)));
          // the record is done when this window reached its end
          if (rows.length < size) await mark(entityId, 0);
          else await mark(after, Number(kept[kept.length - 1].id));
          return gone;
        };
        if (runId > 0) {
          const [from] = await sql.select<VersionRow>(`SELECT ${columns} FROM entity_versions WHERE id = ?`, [runId], tx);
          // (the run went meanwhile, deleted with its record: the record is converted again from its start, or is gone)
          if (!from) return (await mark(after, 0), 0);
          return window(Number(from.entity_id), from);
        }
        // the records of the next rows, one more than a batch: those it holds whole
        const next = await sql.select<{ entity_id: number | string }>('SELECT entity_id FROM entity_versions WHERE entity_id > ? ORDER BY entity_id LIMIT ?', [after, size + 1], tx);
        if (next.length === 0) return (await mark(-1, 0), -1);
        const ids = [...new Set(next.map((r) => Number(r.entity_id)))];
        const whole = next.length <= size ? ids : ids.slice(0, -1);
        // one record with more rows than a batch: its first window
        if (whole.length === 0) return window(ids[0], undefined);
        const rows = await sql.select<VersionRow>(
          `SELECT ${columns} FROM entity_versions WHERE entity_id IN (${whole.map(() => '?').join(', ')}) ORDER BY entity_id, valid_from, version${sql.forUpdate}`, whole, tx,
        );
        const gone = await write(merged(rows), tx);
        await mark(whole[whole.length - 1], 0);
        return gone;
      });
    },

    /**
     * Deletes at most `limit` snapshots older than `cutoff` that a newer snapshot, also older than
     * `cutoff`, replaces: the newest one before the cutoff stays, so lookups inside the window still
     * answer. A tombstone older than the cutoff goes too, with everything before it (every lookup
     * inside the window answers "not found" either way). Returns how many rows it deleted.
     */
    async pruneAlone(cutoff: Date, limit: number): Promise<number> {
      return transact(async (tx) => {
        // the conversion's marks locked first: it may be merging newer rows into one this would delete
        await sql.select(`SELECT position FROM upkeep_marks WHERE name = 'history'${sql.forUpdate}`, [], tx);
        const replaced = `v.deleted = 1 OR EXISTS (
             SELECT 1 FROM entity_versions n WHERE n.entity_id = v.entity_id AND n.valid_from < ?
               AND (n.valid_from > v.valid_from OR (n.valid_from = v.valid_from AND n.version > v.version)))`;
        // the rows locked as they are now: a conversion on another Galera node (whose marks' lock is
        // its node's alone) that merges this row's replacements into it writes this row, so one of
        // the two rolls back (at certification, or when the other's write is applied here); and
        // this row is read again below, after the lock, for a merge that committed just before it
        const locked = await sql.select<{ id: number | string }>(
          `SELECT v.id FROM entity_versions v WHERE v.valid_from < ? AND (${replaced}) ORDER BY v.valid_from LIMIT ?${sql.forUpdate}`,
          [t(cutoff), t(cutoff), limit], tx,
        );
        if (locked.length === 0) return 0;
        const ids = locked.map((r) => r.id);
        const places = ids.map(() => '?').join(', ');
        const rows = await sql.select<{ id: number | string }>(`SELECT v.id FROM entity_versions v WHERE v.id IN (${places}) AND (${replaced})`, [...ids, t(cutoff)], tx);
        if (rows.length === 0) return 0;
        return sql.change(`DELETE FROM entity_versions WHERE id IN (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id), tx);
      });
    },
  };
}
export type VersionQueries = ReturnType<typeof createVersionQueries>;
