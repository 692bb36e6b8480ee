import { asDate } from '../models';
import { actorOf } from './audit';
import type { Sql } from '../sql';
import { EVENT_COLUMNS, eventRow, insertAll } from '../hot-rows';
import { keptUserAgent, type Actor, type EventType, type KeptEvent, type Subject } from '../../domain/events';
import type { ActivityEntry, ActivityQuery, EventStore, FailedSignIn, FailureReason, StoredEvent } from '../../domain/storage/events';
import type { Tx } from '../../domain/storage/transactions';

interface EventRow {
  id: number | string; uid: string; application_id: number | string; type: string; version: number | string; account_id: number | string | null;
  actor_kind: string; actor_id: string; client_id: string | null; subject_kind: string; subject_id: string;
  address: string | null; user_agent: string | null; request_id: string | null; occurred_at: Date | string; data: string;
}

interface FailureRow {
  id: number | string; reason: string; first_at: Date | string; last_at: Date | string; count: number | string;
  client_id: string | null; address: string | null; user_agent: string | null;
}

const optional = <K extends string>(key: K, v: string | null) => (v === null ? {} : { [key]: v }) as Partial<Record<K, string>>;

function toStored(r: EventRow): StoredEvent {
  return {
    id: String(r.id), eventId: r.uid, type: r.type as EventType, version: 1, applicationId: Number(r.application_id), occurredAt: asDate(r.occurred_at),
    actor: actorOf(r.actor_kind, r.actor_id, r.client_id), subject: { kind: r.subject_kind as Subject['kind'], id: r.subject_id },
    origin: { ...optional('address', r.address), ...optional('userAgent', r.user_agent), ...optional('requestId', r.request_id), ...optional('clientId', r.client_id) },
    data: JSON.parse(r.data) as never,
    ...(r.account_id !== null && { accountId: Number(r.account_id) }),
  } as StoredEvent;
}

/** The start of the minute `at` is in: the failed sign-ins of one minute are one row. */
const minuteOf = (at: Date) => new Date(Math.floor(at.getTime() / 60_000) * 60_000);

/** The event store (EventStore of the storage contract) in SQL. */
export function createEventQueries(sql: Sql): EventStore {
  const t = sql.time;
  return {
    async append(events: readonly KeptEvent[], tx: Tx): Promise<void> {
      if (events.length === 0) return;
      await insertAll(sql, 'events', EVENT_COLUMNS, events.map((e) => eventRow(e, t)), tx);
    },

    async countFailureAlone(f: FailedSignIn): Promise<void> {
      // concurrent failures commit in any order (on any node): the minute's first and last are the earliest and latest times
      const again = sql.dialect === 'mysql'
        ? ' ON DUPLICATE KEY UPDATE count = count + 1, first_at = LEAST(first_at, VALUES(first_at)), last_at = GREATEST(last_at, VALUES(last_at)), '
          + 'client_id = VALUES(client_id), address = VALUES(address), user_agent = VALUES(user_agent)'
        : ' ON CONFLICT (application_id, account_id, minute, reason) DO UPDATE SET count = count + 1, first_at = MIN(first_at, excluded.first_at), '
          + 'last_at = MAX(last_at, excluded.last_at), client_id = excluded.client_id, address = excluded.address, user_agent = excluded.user_agent';
      await sql.change(
        `INSERT INTO sign_in_failures (application_id, account_id, reason, minute, first_at, last_at, count, client_id, address, user_agent)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)${again}`,
        [f.applicationId, f.accountId, f.reason, t(minuteOf(f.at)), t(f.at), t(f.at), f.clientId?.slice(0, 255) ?? null,
          f.address?.slice(0, 64) ?? null, keptUserAgent(f.userAgent) ?? null],
      );
    },

    async activity(q: ActivityQuery): Promise<ActivityEntry[]> {
      const types = q.types.filter((type) => type !== 'account.sign_in_failed');
      const failures = types.length < q.types.length;
      const range = (column: string) => {
        const where: string[] = [];
        const values: unknown[] = [];
        if (q.since) where.push(`${column} >= ?`), values.push(t(q.since));
        if (q.until) where.push(`${column} < ?`), values.push(t(q.until));
        return { where, values };
      };
      // after the cursor, in the order newest first, an event before a minute of failures at the same time, then by id;
      // written as a bound on the time first (the index's range) and the tie after it
      const after = (column: string, kind: 'event' | 'failures') => {
        const c = q.after;
        if (!c) return { where: [] as string[], values: [] as unknown[] };
        // the same kind: earlier, or as early with a lower id; failures after an event: as early or earlier; an event after failures: earlier
        if (kind === c.kind) return { where: [`${column} <= ?`, `(${column} < ? OR id < ?)`], values: [t(c.at), t(c.at), Number(c.id)] };
        return kind === 'failures' ? { where: [`${column} <= ?`], values: [t(c.at)] } : { where: [`${column} < ?`], values: [t(c.at)] };
      };
      // the account's index, named: with a bound on the time, MariaDB would otherwise read the account's rows from its newest
      // (an index lookup on the account alone) up to the bound, tens of milliseconds deep in a long history
      const byAccount = sql.dialect === 'mysql' ? 'FORCE INDEX (events_account)' : 'INDEXED BY events_account';
      const found: ActivityEntry[] = [];
      if (types.length > 0) {
        const r = range('occurred_at');
        const a = after('occurred_at', 'event');
        const rows = await sql.select<EventRow>(
          `SELECT * FROM events ${byAccount} WHERE application_id = ? AND account_id = ? AND type IN (${types.map(() => '?').join(', ')})${[...r.where, ...a.where].map((w) => ` AND ${w}`).join('')}
           ORDER BY occurred_at DESC, id DESC LIMIT ?`,
          [q.applicationId, q.accountId, ...types, ...r.values, ...a.values, q.limit],
        );
        for (const row of rows) {
          found.push({
            kind: 'event', id: String(row.id), at: asDate(row.occurred_at), type: row.type as EventType, actorKind: row.actor_kind as Actor['kind'],
            actor: actorOf(row.actor_kind, row.actor_id, row.client_id), data: JSON.parse(row.data) as Record<string, unknown>,
            ...optional('clientId', row.client_id), ...optional('address', row.address), ...optional('userAgent', row.user_agent),
          });
        }
      }
      if (failures) {
        const r = range('first_at');
        const a = after('first_at', 'failures');
        const rows = await sql.select<FailureRow>(
          `SELECT id, reason, first_at, last_at, count, client_id, address, user_agent FROM sign_in_failures
           WHERE application_id = ? AND account_id = ?${[...r.where, ...a.where].map((w) => ` AND ${w}`).join('')}
           ORDER BY first_at DESC, id DESC LIMIT ?`,
          [q.applicationId, q.accountId, ...r.values, ...a.values, q.limit],
        );
        for (const row of rows) {
          found.push({
            kind: 'failures', id: String(row.id), at: asDate(row.first_at), type: 'account.sign_in_failed', reason: row.reason as FailureReason,
            count: Number(row.count), lastAt: asDate(row.last_at),
            ...optional('clientId', row.client_id), ...optional('address', row.address), ...optional('userAgent', row.user_agent),
          });
        }
      }
      const rank = (e: ActivityEntry) => (e.kind === 'event' ? 1 : 0);
      found.sort((x, y) => y.at.getTime() - x.at.getTime() || rank(y) - rank(x) || Number(y.id) - Number(x.id));
      return found.slice(0, q.limit);
    },

    async sweepAlone(before: Date, limit: number): Promise<number> {
      // the oldest events by id (the order they were written in, which is their time's order but for
      // the clocks of pods a moment apart): those of them before the cutoff (one written by a pod whose
      // clock ran ahead is passed over, not waited for, unless a whole batch is such)
      const oldest = await sql.select<{ id: number | string; occurred_at: Date | string }>('SELECT id, occurred_at FROM events ORDER BY id LIMIT ?', [limit]);
      const ids = oldest.filter((r) => asDate(r.occurred_at) < before).map((r) => r.id);
      let removed = ids.length > 0 ? await sql.change(`DELETE FROM events WHERE id IN (${ids.map(() => '?').join(', ')})`, ids) : 0;
      const failures = await sql.select<{ id: number | string }>('SELECT id FROM sign_in_failures WHERE minute < ? ORDER BY minute LIMIT ?', [t(before), limit]);
      if (failures.length > 0) removed += await sql.change(`DELETE FROM sign_in_failures WHERE id IN (${failures.map(() => '?').join(', ')})`, failures.map((r) => r.id));
      return removed;
    },

    async recordChanges(applicationId: number, accountId: number, limit: number): Promise<StoredEvent[]> {
      const rows = await sql.select<EventRow>(
        `SELECT * FROM events WHERE application_id = ? AND account_id = ? AND type IN ('record.created', 'record.updated', 'record.replaced', 'record.deleted')
         ORDER BY occurred_at DESC, id DESC LIMIT ?`,
        [applicationId, accountId, limit],
      );
      return rows.map(toStored);
    },

    async findByUid(uid: string): Promise<StoredEvent | undefined> {
      const [row] = await sql.select<EventRow>('SELECT * FROM events WHERE uid = ?', [uid]);
      return row ? toStored(row) : undefined;
    },
    async findByUids(uids: readonly string[]): Promise<StoredEvent[]> {
      if (uids.length === 0) return [];
      const rows = await sql.select<EventRow>(`SELECT * FROM events WHERE uid IN (${uids.map(() => '?').join(', ')}) ORDER BY id`, [...uids]);
      return rows.map(toStored);
    },
    async listSince(applicationId: number, afterId: number, since: Date, limit: number): Promise<StoredEvent[]> {
      const rows = await sql.select<EventRow>('SELECT * FROM events WHERE id > ? AND application_id = ? AND occurred_at >= ? ORDER BY id LIMIT ?', [afterId, applicationId, t(since), limit]);
      return rows.map(toStored);
    },
    async findNewestId(): Promise<number> {
      const [row] = await sql.select<{ newest: number | string | null }>('SELECT MAX(id) AS newest FROM events', []);
      return Number(row?.newest ?? 0);
    },
    async latest(applicationId: number, limit: number, accountId?: number): Promise<StoredEvent[]> {
      const [mine, values] = accountId === undefined ? ['', []] : [' AND account_id = ?', [accountId]];
      const rows = await sql.select<EventRow>(`SELECT * FROM events WHERE application_id = ?${mine} ORDER BY id DESC LIMIT ?`, [applicationId, ...values, limit]);
      return rows.map(toStored);
    },
  };
}
