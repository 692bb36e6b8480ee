import { Op } from 'sequelize';
import { asDate, type Models, type OutboxRow } from '../models';
import type { Sql } from '../sql';
import { insertAll, OUTBOX_COLUMNS, outboxRow } from '../hot-rows';
import type { OutboxBacklog, OutboxJob, OutboxStatus, StoredOutboxJob } from '../../domain/storage/outbox';
import type { Tx } from '../../domain/storage/transactions';

/** An outbox row as the domain sees it. */
export const toJob = (row: OutboxRow): StoredOutboxJob => ({
  id: row.id,
  applicationId: Number(row.application_id),
  queue: row.queue,
  name: row.name,
  payload: JSON.parse(row.payload) as unknown,
  ...(row.entity_id !== null && row.entity_id !== undefined && { entityId: Number(row.entity_id) }),
  ...(typeof row.event_id === 'string' && { eventId: row.event_id }),
});

export function createOutboxQueries({ Outbox }: Models, sql: Sql) {
  return {
    /** Written in the caller's transaction, beside the change the job belongs to. */
    async insert(jobs: OutboxJob[], now: Date, transaction?: Tx): Promise<void> {
      if (jobs.length === 0) return;
      // raw SQL: on every request that sends an email
      await insertAll(sql, 'outbox', OUTBOX_COLUMNS, jobs.map((j) => outboxRow(j, now, sql.time)), transaction);
    },
    async find(id: string): Promise<(StoredOutboxJob & { status: OutboxStatus; attempts: number }) | undefined> {
      const row = await Outbox.findOne({ where: { id }, raw: true });
      return row ? { ...toJob(row), status: row.status as OutboxStatus, attempts: row.attempts } : undefined;
    },
    /** Marks a pending job finished; false when another worker already did (idempotence guard). */
    async completeAlone(id: string, now: Date, payload?: Record<string, unknown>): Promise<boolean> {
      const [set, values] = payload ? [', payload = ?', [JSON.stringify(payload)]] : ['', []];
      return (await sql.change(
        `UPDATE outbox SET status = 'done', updated_at = ?${set} WHERE id = ? AND status = 'pending'`, [sql.time(now), ...values, id],
      )) === 1;
    },
    async recordFailureAlone(id: string, message: string, final: boolean, now: Date): Promise<void> {
      await Outbox.update(
        {
          status: final ? 'failed' : 'pending',
          last_error: message.slice(0, 1000),
          attempts: Outbox.sequelize!.literal('attempts + 1') as unknown as number,
          updated_at: now,
        },
        { where: { id, status: 'pending' } },
      );
    },
    /** Jobs still pending after `olderThan`: Redis was down, or a pod died between commit and enqueue. */
    async stragglers(olderThan: Date, limit: number): Promise<StoredOutboxJob[]> {
      const rows = await Outbox.findAll({
        where: { status: 'pending', created_at: { [Op.lt]: olderThan } },
        order: [['created_at', 'ASC']],
        limit,
        raw: true,
      });
      return rows.map(toJob);
    },
    /** Deletes finished rows older than `before`, at most `limit`; returns how many. */
    async purgeDoneAlone(before: Date, limit: number): Promise<number> {
      const rows = await Outbox.findAll({
        attributes: ['id'],
        where: { status: 'done', updated_at: { [Op.lt]: before } },
        limit,
        raw: true,
      });
      if (rows.length === 0) return 0;
      return Outbox.destroy({ where: { id: rows.map((r) => r.id), status: 'done' } });
    },
    async backlog(): Promise<OutboxBacklog[]> {
      const rows = await sql.select<{ queue: string; n: number | string; oldest: Date | string }>(
        "SELECT queue, COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE status = 'pending' GROUP BY queue", [],
      );
      return rows.map((r) => ({ queue: r.queue, pending: Number(r.n), oldest: asDate(r.oldest) }));
    },
    async countFailed(since: Date) {
      // along outbox_status_created: the failed rows only, which are few
      const rows = await sql.select<{ application_id: number | string; queue: string; n: number | string }>(
        "SELECT application_id, queue, COUNT(*) AS n FROM outbox WHERE status = 'failed' AND created_at >= ? GROUP BY application_id, queue", [sql.time(since)],
      );
      return rows.map((r) => ({ applicationId: Number(r.application_id), queue: r.queue, failed: Number(r.n) }));
    },
  };
}
export type OutboxQueries = ReturnType<typeof createOutboxQueries>;
