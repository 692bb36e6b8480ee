import { asDate } from '../models';
import type { DaySketch, DayTally, Tallied, TallyEvent, TallyFailure, TallyMetric, TallyStore } from '../../domain/storage/tallies';
import type { Transact, Tx } from '../../domain/storage/transactions';
import type { Sql } from '../sql';

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** The overview's tallies (TallyStore of the storage contract) in SQL. */
type Source = 'events' | 'failures';

export function createTallyQueries(sql: Sql, transaction: Transact): TallyStore {
  const mysql = sql.dialect === 'mysql';
  const ofApp = (applicationId: number | undefined) => (applicationId === undefined ? { where: '', values: [] } : { where: ' AND application_id = ?', values: [applicationId] });
  const q = {
    async mark(source: Source, tx: Tx) {
      const rows = await sql.select<{ last_id: number | string }>(`SELECT last_id FROM activity_marks WHERE source = ?${sql.forUpdate}`, [source], tx);
      return rows.length === 0 ? 0 : Number(rows[0]!.last_id);
    },
    async setMark(source: Source, lastId: number, tx: Tx) {
      await sql.change('UPDATE activity_marks SET last_id = ? WHERE source = ?', [lastId, source], tx);
    },
    async eventsAfter(afterId: number, limit: number, types: readonly string[], tx: Tx): Promise<TallyEvent[]> {
      // along the primary key; the data of the types counted only
      const rows = await sql.select<{ id: number | string; application_id: number | string; type: string; account_id: number | string | null; occurred_at: Date | string; data: string | null }>(
        `SELECT id, application_id, type, account_id, occurred_at, CASE WHEN type IN (${placeholders(types.length)}) THEN data ELSE NULL END AS data
         FROM events WHERE id > ? ORDER BY id LIMIT ?`, [...types, afterId, limit], tx,
      );
      return rows.map((r) => ({
        id: Number(r.id), applicationId: Number(r.application_id), type: r.type, accountId: r.account_id === null ? null : Number(r.account_id),
        occurredAt: asDate(r.occurred_at), data: r.data === null ? {} : JSON.parse(r.data) as Record<string, unknown>,
      }));
    },
    async failuresAfter(afterId: number, limit: number, tx: Tx): Promise<TallyFailure[]> {
      const rows = await sql.select<{ id: number | string; application_id: number | string; reason: string; minute: Date | string; count: number | string }>(
        'SELECT id, application_id, reason, minute, count FROM sign_in_failures WHERE id > ? ORDER BY id LIMIT ?', [afterId, limit], tx,
      );
      return rows.map((r) => ({ id: Number(r.id), applicationId: Number(r.application_id), reason: r.reason, minute: asDate(r.minute), count: Number(r.count) }));
    },
    async add(tallies: readonly DayTally[], tx: Tx) {
      if (tallies.length === 0) return;
      // in the unique key's order, so that no two writers could wait for each other
      const sorted = [...tallies].sort((a, b) => a.applicationId - b.applicationId || a.day.localeCompare(b.day) || a.metric.localeCompare(b.metric) || a.detail.localeCompare(b.detail));
      const again = mysql ? ' ON DUPLICATE KEY UPDATE count = count + VALUES(count)'
        : ' ON CONFLICT (application_id, day, metric, detail) DO UPDATE SET count = count + excluded.count';
      for (let i = 0; i < sorted.length; i += 200) {
        const chunk = sorted.slice(i, i + 200);
        await sql.change(`INSERT INTO activity_tallies (application_id, day, metric, detail, count) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}${again}`,
          chunk.flatMap((x) => [x.applicationId, x.day, x.metric, x.detail.slice(0, 32), x.count]), tx);
      }
    },
    async sketches(keys: readonly { applicationId: number; day: string }[], tx: Tx): Promise<DaySketch[]> {
      if (keys.length === 0) return [];
      const rows = await sql.select<{ application_id: number | string; day: string; registers: Buffer }>(
        `SELECT application_id, day, registers FROM activity_sketches WHERE ${keys.map(() => '(application_id = ? AND day = ?)').join(' OR ')}`,
        keys.flatMap((k) => [k.applicationId, k.day]), tx,
      );
      return rows.map((r) => ({ applicationId: Number(r.application_id), day: r.day, registers: Buffer.from(r.registers) }));
    },
    async putSketches(sketches: readonly DaySketch[], tx: Tx) {
      const again = mysql ? ' ON DUPLICATE KEY UPDATE registers = VALUES(registers)' : ' ON CONFLICT (application_id, day) DO UPDATE SET registers = excluded.registers';
      for (const s of [...sketches].sort((a, b) => a.applicationId - b.applicationId || a.day.localeCompare(b.day))) {
        await sql.change(`INSERT INTO activity_sketches (application_id, day, registers) VALUES (?, ?, ?)${again}`, [s.applicationId, s.day, s.registers], tx);
      }
    },
  };
  /** Reads after the mark, folds, writes what the fold says and moves the mark: one transaction. */
  const advance = <R extends { id: number }>(source: Source, read: (after: number, tx: Tx) => Promise<R[]>, fold: (rows: R[], tx: Tx) => Promise<Tallied>) =>
    transaction(async (tx) => {
      const rows = await read(await q.mark(source, tx), tx);
      if (rows.length === 0) return 0;
      const tallied = await fold(rows, tx);
      const { lastId } = tallied;
      if (lastId === null) return 0;
      await q.add(tallied.tallies, tx);
      await q.putSketches(tallied.sketches, tx);
      await q.setMark(source, lastId, tx);
      return rows.filter((r) => r.id <= lastId).length;
    });
  /** The id before the first row of `table` whose `column` is at `since` or later (the table's ids grow with its times). */
  const before = async (table: string, column: string, since: Date, tx: Tx) => {
    const [ends] = await sql.select<{ lo: number | string | null; hi: number | string | null }>(`SELECT MIN(id) AS lo, MAX(id) AS hi FROM ${table}`, [], tx);
    if (!ends || ends.lo === null || ends.hi === null) return 0;
    let lo = Number(ends.lo);
    let hi = Number(ends.hi);
    let first = hi + 1;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      const [row] = await sql.select<{ id: number | string; at: Date | string }>(`SELECT id, ${column} AS at FROM ${table} WHERE id >= ? ORDER BY id LIMIT 1`, [mid], tx);
      // no row from mid to hi: look below
      if (!row || Number(row.id) > hi) hi = mid - 1;
      else if (asDate(row.at).getTime() < since.getTime()) lo = Number(row.id) + 1;
      else {
        first = Number(row.id);
        hi = mid - 1;
      }
    }
    return first - 1;
  };
  return {
    beginAlone: (since: Date) => transaction(async (tx) => {
      for (const [source, table, column] of [['events', 'events', 'occurred_at'], ['failures', 'sign_in_failures', 'minute']] as const) {
        if (await q.mark(source, tx) === 0) await q.setMark(source, Math.max(0, await before(table, column, since, tx)), tx);
      }
    }),
    tallyEventsAlone: (limit, types, fold) => advance('events', (after, tx) => q.eventsAfter(after, limit, types, tx), (rows, tx) => fold(rows, (keys) => q.sketches(keys, tx))),
    tallyFailuresAlone: (limit, fold) => advance('failures', (after, tx) => q.failuresAfter(after, limit, tx), (rows) => fold(rows)),
    async counts(range: { from: string; to: string; applicationId?: number }): Promise<DayTally[]> {
      const app = ofApp(range.applicationId);
      const rows = await sql.select<{ day: string; metric: string; detail: string; n: number | string }>(
        `SELECT day, metric, detail, SUM(count) AS n FROM activity_tallies WHERE day >= ? AND day <= ?${app.where} GROUP BY day, metric, detail`,
        [range.from, range.to, ...app.values],
      );
      return rows.map((r) => ({ applicationId: range.applicationId ?? 0, day: r.day, metric: r.metric as TallyMetric, detail: r.detail, count: Number(r.n) }));
    },
    async listSketches(range: { from: string; to: string; applicationId?: number }): Promise<DaySketch[]> {
      const app = ofApp(range.applicationId);
      const rows = await sql.select<{ application_id: number | string; day: string; registers: Buffer }>(
        `SELECT application_id, day, registers FROM activity_sketches WHERE day >= ? AND day <= ?${app.where}`, [range.from, range.to, ...app.values],
      );
      return rows.map((r) => ({ applicationId: Number(r.application_id), day: r.day, registers: Buffer.from(r.registers) }));
    },
  };
}
