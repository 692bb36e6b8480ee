import type { LogoutStore, StoredLogout } from '../../domain/storage/logouts';
import { asDate } from '../models';
import type { Sql } from '../sql';

interface Row {
  id: number | string; application_id: number | string; client_id: string; account_id: number | string | null; subject: string | null; sid: string | null; jti: string;
  state: string; attempts: number | string; last_attempt_at: Date | string | null; last_status: number | string | null; last_ms: number | string | null;
  last_answer: string | null; created_at: Date | string; finished_at: Date | string | null;
}

const num = (v: number | string | null) => (v === null ? null : Number(v));
const toLogout = (r: Row): StoredLogout => ({
  id: Number(r.id), applicationId: Number(r.application_id), clientId: r.client_id, accountId: num(r.account_id), subject: r.subject, sid: r.sid, jti: r.jti,
  state: r.state === 'delivered' || r.state === 'failed' ? r.state : 'pending', attempts: Number(r.attempts),
  lastAttemptAt: r.last_attempt_at === null ? null : asDate(r.last_attempt_at), lastStatus: num(r.last_status), lastMs: num(r.last_ms), lastAnswer: r.last_answer,
  createdAt: asDate(r.created_at), finishedAt: r.finished_at === null ? null : asDate(r.finished_at),
});

/** The logout tokens owed to clients (LogoutStore of the storage contract) in SQL. */
export function createLogoutQueries(sql: Sql): LogoutStore {
  const t = sql.time;
  return {
    async insert(logouts, now, tx) {
      for (const l of logouts) {
        await sql.change(
          "INSERT INTO logout_deliveries (application_id, client_id, account_id, subject, sid, jti, state, attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?)",
          [l.applicationId, l.clientId, l.accountId, l.subject, l.sid, l.jti, t(now)], tx,
        );
      }
    },
    async find(jti) {
      const [row] = await sql.select<Row>('SELECT * FROM logout_deliveries WHERE jti = ?', [jti]);
      return row ? toLogout(row) : undefined;
    },
    async recordAttemptAlone(jti, a, now) {
      return (await sql.change(
        `UPDATE logout_deliveries SET attempts = attempts + 1, last_attempt_at = ?, last_status = ?, last_ms = ?, last_answer = ?, state = ?, finished_at = ?${a.forgetSubject ? ', subject = NULL, sid = NULL' : ''}
         WHERE jti = ? AND state = 'pending'`,
        [t(now), a.status, a.ms, a.answer.slice(0, 300), a.state, a.state === 'pending' ? null : t(now), jti],
      )) === 1;
    },
    async list(applicationId, clientId, limit) {
      return (await sql.select<Row>('SELECT * FROM logout_deliveries WHERE application_id = ? AND client_id = ? ORDER BY id DESC LIMIT ?', [applicationId, clientId, limit])).map(toLogout);
    },
    async purgeFinishedAlone(before, limit) {
      const rows = await sql.select<{ id: number | string }>('SELECT id FROM logout_deliveries WHERE finished_at < ? ORDER BY finished_at LIMIT ?', [t(before), limit]);
      if (rows.length === 0) return 0;
      return sql.change(`DELETE FROM logout_deliveries WHERE id IN (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id));
    },
  };
}
