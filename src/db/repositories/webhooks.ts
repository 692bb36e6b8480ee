import type { NewEndpoint, StoredEndpoint, WebhookStore } from '../../domain/storage/webhooks';
import { asDate } from '../models';
import type { Sql } from '../sql';

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
  };
}
