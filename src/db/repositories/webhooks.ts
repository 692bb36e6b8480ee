import type { DeliveryState, NewEndpoint, StoredDelivery, StoredEndpoint, WebhookStore } from '../../domain/storage/webhooks';
import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

interface EndpointRow {
  id: number | string; application_id: number | string; endpoint_id: string; url: string; event_types: string; description: string;
  include_record: number | boolean | string; secret_sealed: string; previous_secret_sealed: string | null; previous_until: Date | string | null;
  disabled_at: Date | string | null; created_at: Date | string;
}

const toEndpoint = (r: EndpointRow): StoredEndpoint => {
  const types = JSON.parse(r.event_types) as unknown;
  return {
    id: Number(r.id), applicationId: Number(r.application_id), endpointId: r.endpoint_id, url: r.url,
    types: Array.isArray(types) ? types.filter((t): t is string => typeof t === 'string') : '*',
    description: r.description, includeRecord: r.include_record === true || Number(r.include_record) === 1,
    secretSealed: r.secret_sealed, previousSecretSealed: r.previous_secret_sealed, previousUntil: asDate(r.previous_until),
    disabledAt: asDate(r.disabled_at), createdAt: asDate(r.created_at),
  };
};

interface DeliveryRow {
  id: number | string; application_id: number | string; endpoint_id: number | string; message_id: string; type: string; account_key: string; payload: string;
  state: string; attempts: number | string; next_attempt_at: Date | string; last_attempt_at: Date | string | null; last_status: number | string | null;
  last_ms: number | string | null; last_answer: string | null; created_at: Date | string;
}

const toDelivery = (r: DeliveryRow): StoredDelivery => ({
  id: Number(r.id), applicationId: Number(r.application_id), endpointId: Number(r.endpoint_id), messageId: r.message_id, type: r.type, accountKey: r.account_key,
  payload: r.payload, state: r.state as DeliveryState, attempts: Number(r.attempts), nextAttemptAt: asDate(r.next_attempt_at), lastAttemptAt: asDate(r.last_attempt_at),
  lastStatus: r.last_status === null ? null : Number(r.last_status), lastMs: r.last_ms === null ? null : Number(r.last_ms), lastAnswer: r.last_answer, createdAt: asDate(r.created_at),
});

/** Webhook endpoints (WebhookStore of the storage contract) in SQL. */
export function createWebhookQueries(sql: Sql): WebhookStore {
  const t = sql.time;
  const find = async (applicationId: number, endpointId: string, tx?: Parameters<WebhookStore['find']>[2]) => {
    const [row] = await sql.select<EndpointRow>(`SELECT * FROM webhook_endpoints WHERE application_id = ? AND endpoint_id = ?${tx ? sql.forUpdate : ''}`, [applicationId, endpointId], tx);
    return row ? toEndpoint(row) : undefined;
  };
  return {
    async insert(e: NewEndpoint, now, tx) {
      await sql.change(
        'INSERT INTO webhook_endpoints (application_id, endpoint_id, url, event_types, description, include_record, secret_sealed, previous_secret_sealed, previous_until, disabled_at, failing_since, created_at, updated_at) '
        + 'VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?)',
        [e.applicationId, e.endpointId, e.url, JSON.stringify(e.types), e.description, e.includeRecord, e.secretSealed, t(now), t(now)], tx,
      );
      return (await find(e.applicationId, e.endpointId, tx))!;
    },
    async list(applicationId) {
      const rows = await sql.select<EndpointRow>('SELECT * FROM webhook_endpoints WHERE application_id = ? ORDER BY id', [applicationId]);
      return rows.map(toEndpoint);
    },
    find,
    async remove(applicationId, endpointId, tx) {
      return (await sql.change('DELETE FROM webhook_endpoints WHERE application_id = ? AND endpoint_id = ?', [applicationId, endpointId], tx)) > 0;
    },
    async rotateSecret(applicationId, endpointId, secretSealed, previousUntil, now, tx) {
      return (await sql.change(
        'UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_until = ?, secret_sealed = ?, updated_at = ? WHERE application_id = ? AND endpoint_id = ?',
        [t(previousUntil), secretSealed, t(now), applicationId, endpointId], tx,
      )) > 0;
    },
    async insertDeliveries(deliveries, now, tx) {
      let inserted = 0;
      for (const d of deliveries) {
        // a fan-out that runs again skips what it inserted before
        const [held] = await sql.select<{ id: number }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = ? AND message_id = ?', [d.endpointId, d.messageId], tx);
        if (held) continue;
        try {
          await sql.change(
            'INSERT INTO webhook_deliveries (application_id, endpoint_id, message_id, type, account_key, payload, state, attempts, next_attempt_at, last_attempt_at, '
            + "last_status, last_ms, last_answer, created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL, NULL, ?, NULL)",
            [d.applicationId, d.endpointId, d.messageId, d.type, d.accountKey, d.payload, t(now), t(now)], tx,
          );
        } catch (e) {
          // a fan-out of the same event committing meanwhile holds it
          if (e instanceof DuplicateKeyError) continue;
          throw e;
        }
        inserted++;
      }
      return inserted;
    },
    async listDueDeliveries(endpointId, now, limit) {
      const rows = await sql.select<DeliveryRow>(
        "SELECT d.* FROM webhook_deliveries d WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.next_attempt_at <= ? "
        + "AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id AND e.state = 'pending' AND e.account_key = d.account_key AND e.id < d.id) "
        + 'ORDER BY d.id LIMIT ?',
        [endpointId, t(now), limit],
      );
      return rows.map(toDelivery);
    },
    async listDueEndpoints(now, limit) {
      const rows = await sql.select<{ endpoint_id: number | string }>(
        "SELECT DISTINCT endpoint_id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY endpoint_id LIMIT ?", [t(now), limit],
      );
      return rows.map((r) => Number(r.endpoint_id));
    },
    async recordAttemptAlone(deliveryId, a, now) {
      return (await sql.change(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?, last_ms = ?, last_answer = ?, finished_at = ? WHERE id = ? AND state = 'pending'",
        [a.state, t(a.nextAttemptAt), t(now), a.status, a.ms, a.answer.slice(0, 512), a.state === 'pending' ? null : t(now), deliveryId],
      )) > 0;
    },
    async listDeliveries(applicationId, endpointId, limit) {
      const rows = await sql.select<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE application_id = ? AND endpoint_id = ? ORDER BY id DESC LIMIT ?', [applicationId, endpointId, limit]);
      return rows.map(toDelivery);
    },
  };
}
