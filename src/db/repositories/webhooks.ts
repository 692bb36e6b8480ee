import { randomBytes } from 'node:crypto';
import type { Transact, Tx } from '../../domain/storage/transactions';
import type { DeliveryState, NewDelivery, NewEndpoint, StoredDelivery, StoredEndpoint, WebhookStore } from '../../domain/storage/webhooks';
import { RETRY_FOR_MS } from '../../domain/webhooks';
import { asDate, type OutboxRow } from '../models';
import { toJob } from './outbox';
import { DuplicateKeyError, type Sql } from '../sql';

interface EndpointRow {
  id: number | string; application_id: number | string; endpoint_id: string; url: string; event_types: string; description: string;
  include_record: number | boolean | string; secret_sealed: string; previous_secret_sealed: string | null; previous_until: Date | string | null;
  disabled_at: Date | string | null; failing_since: Date | string | null; events_from: number | string | null; listening_since: Date | string; created_at: Date | string;
}

const toEndpoint = (r: EndpointRow): StoredEndpoint => {
  const types = JSON.parse(r.event_types) as unknown;
  return {
    id: Number(r.id), applicationId: Number(r.application_id), endpointId: r.endpoint_id, url: r.url,
    types: Array.isArray(types) ? types.filter((t): t is string => typeof t === 'string') : '*',
    description: r.description, includeRecord: r.include_record === true || Number(r.include_record) === 1,
    secretSealed: r.secret_sealed, previousSecretSealed: r.previous_secret_sealed, previousUntil: asDate(r.previous_until),
    disabledAt: asDate(r.disabled_at), failingSince: asDate(r.failing_since), eventsFrom: r.events_from === null ? null : Number(r.events_from), listeningSince: asDate(r.listening_since), createdAt: asDate(r.created_at),
  };
};

interface DeliveryRow {
  id: number | string; application_id: number | string; endpoint_id: number | string; message_id: string; type: string; account_key: string;
  account_id: number | string | null; event_seq: number | string; payload: string;
  state: string; attempts: number | string; next_attempt_at: Date | string; give_up_at: Date | string; last_attempt_at: Date | string | null; last_status: number | string | null;
  last_ms: number | string | null; last_answer: string | null; created_at: Date | string;
}

const toDelivery = (r: DeliveryRow): StoredDelivery => ({
  id: Number(r.id), applicationId: Number(r.application_id), endpointId: Number(r.endpoint_id), messageId: r.message_id, type: r.type, accountKey: r.account_key,
  accountId: r.account_id === null ? null : Number(r.account_id), eventSeq: Number(r.event_seq), payload: r.payload, state: r.state as DeliveryState, attempts: Number(r.attempts), nextAttemptAt: asDate(r.next_attempt_at), giveUpAt: asDate(r.give_up_at), lastAttemptAt: asDate(r.last_attempt_at),
  lastStatus: r.last_status === null ? null : Number(r.last_status), lastMs: r.last_ms === null ? null : Number(r.last_ms), lastAnswer: r.last_answer, createdAt: asDate(r.created_at),
});

/** How many of an endpoint's first pending deliveries are looked at for its due ones. */
const DUE_WINDOW = 500;

/** When a delivery made or sent again at `now` is given up if it keeps failing. */
const giveUpFrom = (now: Date) => new Date(now.getTime() + RETRY_FOR_MS);

/** Webhook endpoints (WebhookStore of the storage contract) in SQL. */
export function createWebhookQueries(sql: Sql, transaction?: Transact): WebhookStore {
  const t = sql.time;
  const transact = <T>(work: (tx: Tx) => Promise<T>) => {
    if (!transaction) throw new Error('the webhooks worker writes through the primary');
    return transaction(work, { readCommitted: true });
  };
  async function insertDeliveries(deliveries: NewDelivery[], now: Date, tx: Tx): Promise<number> {
    let inserted = 0;
    for (const d of deliveries) {
      // a fan-out that runs again (or a catch-up) skips what was inserted before
      const [held] = await sql.select<{ id: number }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = ? AND message_id = ?', [d.endpointId, d.messageId], tx);
      if (held) continue;
      try {
        await sql.change(
          'INSERT INTO webhook_deliveries (application_id, endpoint_id, message_id, type, account_key, account_id, event_seq, payload, state, attempts, next_attempt_at, give_up_at, '
          + "last_attempt_at, last_status, last_ms, last_answer, created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, NULL, NULL, NULL, NULL, ?, NULL)",
          [d.applicationId, d.endpointId, d.messageId, d.type, d.accountKey, d.accountId, d.eventSeq, d.payload, t(now), t(giveUpFrom(now)), t(now)], tx,
        );
      } catch (e) {
        // a fan-out of the same event committing meanwhile holds it
        if (e instanceof DuplicateKeyError) continue;
        throw e;
      }
      inserted++;
    }
    return inserted;
  }
  const find = async (applicationId: number, endpointId: string, tx?: Parameters<WebhookStore['find']>[2]) => {
    const [row] = await sql.select<EndpointRow>(`SELECT * FROM webhook_endpoints WHERE application_id = ? AND endpoint_id = ?${tx ? sql.forUpdate : ''}`, [applicationId, endpointId], tx);
    return row ? toEndpoint(row) : undefined;
  };
  return {
    async insert(e: NewEndpoint, now, tx) {
      await sql.change(
        'INSERT INTO webhook_endpoints (application_id, endpoint_id, url, event_types, description, include_record, secret_sealed, previous_secret_sealed, previous_until, disabled_at, failing_since, events_from, listening_since, created_at, updated_at) '
        + 'VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?)',
        [e.applicationId, e.endpointId, e.url, JSON.stringify(e.types), e.description, e.includeRecord, e.secretSealed, e.eventsFrom, t(now), t(now), t(now)], tx,
      );
      return (await find(e.applicationId, e.endpointId, tx))!;
    },
    async list(applicationId) {
      const rows = await sql.select<EndpointRow>('SELECT * FROM webhook_endpoints WHERE application_id = ? ORDER BY id', [applicationId]);
      return rows.map(toEndpoint);
    },
    find,
    async findByKey(id) {
      const [row] = await sql.select<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [id]);
      return row ? toEndpoint(row) : undefined;
    },
    async remove(applicationId, endpointId, tx) {
      return (await sql.change('DELETE FROM webhook_endpoints WHERE application_id = ? AND endpoint_id = ?', [applicationId, endpointId], tx)) > 0;
    },
    async rotateSecret(applicationId, endpointId, secretSealed, previousUntil, now, tx) {
      return (await sql.change(
        'UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_until = ?, secret_sealed = ?, updated_at = ? WHERE application_id = ? AND endpoint_id = ?',
        [t(previousUntil), secretSealed, t(now), applicationId, endpointId], tx,
      )) > 0;
    },
    insertDeliveries,
    async fanOutAlone(outboxId, deliveries, now, caughtUp) {
      return transact(async (tx) => {
        // (its payload, the account's uuid at most, is not kept once fanned out)
        if ((await sql.change("UPDATE outbox SET status = 'done', payload = '{}', updated_at = ? WHERE id = ? AND status = 'pending'", [t(now), outboxId], tx)) === 0) return false;
        await insertDeliveries(deliveries, now, tx);
        if (caughtUp !== undefined) await sql.change('UPDATE webhook_endpoints SET events_from = NULL WHERE id = ?', [caughtUp], tx);
        return true;
      });
    },
    async fanOutBatchAlone(ownId, limit, deliveriesOf, now) {
      // the rows read and their deliveries made before the transaction (its reads wait for nothing it holds)
      const own = await sql.select<OutboxRow>("SELECT * FROM outbox WHERE id = ? AND status = 'pending'", [ownId]);
      if (own.length === 0) return { own: false, deliveries: [] };
      const others = await sql.select<OutboxRow>(
        "SELECT * FROM outbox WHERE status = 'pending' AND queue = 'webhooks' AND name = 'fan-out' AND id <> ? ORDER BY created_at LIMIT ?", [ownId, limit - 1],
      );
      const made = await deliveriesOf([...own, ...others].map(toJob));
      const lock = sql.dialect === 'mysql' ? ' FOR UPDATE SKIP LOCKED' : '';
      return transact(async (tx) => {
        // the rows still pending and held by no other worker: those are this batch's
        const ids = [ownId, ...others.map((r) => r.id)];
        const held = new Set((await sql.select<{ id: string }>(
          `SELECT id FROM outbox WHERE id IN (${ids.map(() => '?').join(', ')}) AND status = 'pending' ORDER BY id${lock}`, ids, tx,
        )).map((r) => r.id));
        if (!held.has(ownId)) {
          // skipped: done meanwhile, or locked by another transaction (which may yet leave it pending)
          const [row] = await sql.select<{ status: string }>('SELECT status FROM outbox WHERE id = ?', [ownId], tx);
          return { own: false, held: row?.status === 'pending', deliveries: [] };
        }
        // a row whose deliveries could not be made stays pending, for its own job to try again
        const mine = [...held].filter((id) => made.has(id));
        if (mine.length === 0) return { own: false, deliveries: [] };
        // (a payload, an account's uuid at most, is not kept once fanned out)
        await sql.change(`UPDATE outbox SET status = 'done', payload = '{}', updated_at = ? WHERE id IN (${mine.map(() => '?').join(', ')})`, [t(now), ...mine], tx);
        const deliveries = mine.flatMap((id) => made.get(id) ?? []);
        await insertDeliveries(deliveries, now, tx);
        return { own: mine.includes(ownId), deliveries };
      });
    },
    async listDueDeliveries(endpointId, now, limit) {
      // the endpoint's first pending deliveries in the store's order (an index range), each with whether an
      // earlier event of its account is not fanned out yet (a slower worker holds its row), in one statement:
      // a fan-out commits its row's end and its deliveries at once, so this read sees one or the other
      type Slim = { id: number | string; account_key: string; event_seq: number | string; next_attempt_at: Date | string; blocked: number | string };
      const columns = 'd.id, d.account_key, d.event_seq, d.next_attempt_at, CASE WHEN d.account_id IS NOT NULL AND EXISTS (SELECT 1 FROM outbox o JOIN events v ON v.uid = o.event_id '
        + "WHERE o.entity_id = d.account_id AND o.queue = 'webhooks' AND o.status = 'pending' AND v.id < d.event_seq) THEN 1 ELSE 0 END AS blocked";
      const window = await sql.select<Slim>(
        `SELECT ${columns} FROM webhook_deliveries d WHERE d.endpoint_id = ? AND d.state = 'pending' ORDER BY d.event_seq, d.id LIMIT ?`, [endpointId, DUE_WINDOW],
      );
      const firstOfEach = (rows: Slim[]) => {
        const seen = new Set<string>();
        return rows.filter((r) => !seen.has(r.account_key) && seen.add(r.account_key));
      };
      const sendable = (r: Slim) => asDate(r.next_attempt_at).getTime() <= now.getTime() && Number(r.blocked) === 0;
      let heads = firstOfEach(window);
      if (window.length === DUE_WINDOW && heads.filter(sendable).length < limit) {
        // a full window of accounts waiting on a retry: every account's first, however far
        heads = await sql.select<Slim>(
          `SELECT ${columns} FROM webhook_deliveries d JOIN (SELECT account_key, MIN(event_seq) AS seq FROM webhook_deliveries `
          + "WHERE endpoint_id = ? AND state = 'pending' GROUP BY account_key) h ON d.account_key = h.account_key AND d.event_seq = h.seq WHERE d.endpoint_id = ? AND d.state = 'pending' "
          + 'ORDER BY d.event_seq, d.id', [endpointId, endpointId],
        );
      }
      const ids = heads.filter(sendable).slice(0, limit).map((d) => d.id);
      if (ids.length === 0) return { due: [], others: window.length };
      const due = (await sql.select<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE id IN (${ids.map(() => '?').join(', ')}) AND state = 'pending' ORDER BY event_seq, id`, ids)).map(toDelivery);
      return { due, others: window.length - due.length };
    },
    async listDueEndpoints(now, limit) {
      const rows = await sql.select<{ endpoint_id: number | string }>(
        'SELECT d.endpoint_id, MIN(d.next_attempt_at) AS due FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id '
        + "WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND e.disabled_at IS NULL GROUP BY d.endpoint_id ORDER BY due LIMIT ?", [t(now), limit],
      );
      return rows.map((r) => Number(r.endpoint_id));
    },
    async claimAlone(deliveryIds, now, until) {
      // a token of this claim: the rows that hold it are this worker's, and only this worker records their attempt
      const claim = randomBytes(12).toString('hex');
      if (deliveryIds.length === 0) return { claim, ids: [] };
      const list = deliveryIds.map(() => '?').join(', ');
      await sql.change(
        `UPDATE webhook_deliveries SET next_attempt_at = ?, claim = ? WHERE id IN (${list}) AND state = 'pending' AND next_attempt_at <= ?`, [t(until), claim, ...deliveryIds, t(now)],
      );
      const taken = await sql.select<{ id: number | string }>(`SELECT id FROM webhook_deliveries WHERE id IN (${list}) AND claim = ?`, [...deliveryIds, claim]);
      return { claim, ids: taken.map((r) => Number(r.id)) };
    },
    async recordAttemptAlone(deliveryId, a, now) {
      return (await sql.change(
        `UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?, last_ms = ?, last_answer = ?, finished_at = ?${a.payload === undefined ? '' : ', payload = ?'} `
        + "WHERE id = ? AND state = 'pending' AND claim = ?",
        [a.state, t(a.nextAttemptAt), t(now), a.status, a.ms, a.answer.slice(0, 512), a.state === 'pending' ? null : t(now), ...(a.payload === undefined ? [] : [a.payload]), deliveryId, a.claim],
      )) > 0;
    },
    async markFailingAlone(endpointId, since) {
      return (await sql.change(`UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS ${since ? '' : 'NOT '}NULL`, [since && t(since), endpointId])) > 0;
    },
    async listDeliveries(applicationId, endpointId, limit) {
      const rows = await sql.select<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE application_id = ? AND endpoint_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [applicationId, endpointId, limit]);
      return rows.map(toDelivery);
    },
    async findDelivery(applicationId, deliveryId) {
      const [row] = await sql.select<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE application_id = ? AND id = ?', [applicationId, deliveryId]);
      return row ? toDelivery(row) : undefined;
    },
    async listSubscriptions() {
      const rows = await sql.select<{ application_id: number | string; event_types: string }>('SELECT application_id, event_types FROM webhook_endpoints WHERE disabled_at IS NULL', []);
      return rows.map((r) => {
        const types = JSON.parse(r.event_types) as unknown;
        return { applicationId: Number(r.application_id), types: Array.isArray(types) ? types.filter((x): x is string => typeof x === 'string') : '*' as const };
      });
    },
    async setDisabled(applicationId, endpointId, disabledAt, now, eventsFrom, tx) {
      const enabled = disabledAt === null ? ', events_from = ?, listening_since = ?' : '';
      return (await sql.change(
        `UPDATE webhook_endpoints SET disabled_at = ?, failing_since = NULL, updated_at = ?${enabled} WHERE application_id = ? AND endpoint_id = ?`,
        [disabledAt && t(disabledAt), t(now), ...(disabledAt === null ? [eventsFrom, t(now)] : []), applicationId, endpointId], tx,
      )) > 0;
    },
    async resend(applicationId, deliveryId, now, tx) {
      return (await sql.change(
        "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, give_up_at = ?, finished_at = NULL WHERE application_id = ? AND id = ? AND state <> 'pending'",
        [t(now), t(giveUpFrom(now)), applicationId, deliveryId], tx,
      )) > 0;
    },
    async replayFailed(endpointId, since, now, tx) {
      return sql.change(
        "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, give_up_at = ?, finished_at = NULL WHERE endpoint_id = ? AND created_at >= ? AND state = 'failed'",
        [t(now), t(giveUpFrom(now)), endpointId, t(since)], tx,
      );
    },
    async findAccountUuid(applicationId, entityId) {
      const [live] = await sql.select<{ uuid: string }>('SELECT uuid FROM entities WHERE application_id = ? AND id = ?', [applicationId, entityId]);
      if (live) return live.uuid;
      // deleted: its tombstone, recorded or still waiting in the outbox (one statement: the row moves between them in one transaction)
      const rows = await sql.select<{ uuid: string | null; payload: string | null }>(
        'SELECT entity_uuid AS uuid, NULL AS payload FROM entity_versions WHERE application_id = ? AND entity_id = ? AND entity_uuid IS NOT NULL UNION ALL '
        + "SELECT NULL AS uuid, payload FROM outbox WHERE entity_id = ? AND queue = 'versions' AND application_id = ? AND payload LIKE '%\"uuid\"%'",
        [applicationId, entityId, entityId, applicationId],
      );
      for (const r of rows) {
        if (r.uuid) return r.uuid;
        try {
          const uuid = (JSON.parse(r.payload ?? '{}') as { uuid?: unknown }).uuid;
          if (typeof uuid === 'string') return uuid;
        } catch {
          // not a snapshot's payload: the next row
        }
      }
      return undefined;
    },
    async listBacklog() {
      const rows = await sql.select<{ endpoint_id: string; pending: number | string; oldest: Date | string }>(
        "SELECT e.endpoint_id, COUNT(*) AS pending, MIN(d.created_at) AS oldest FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.state = 'pending' GROUP BY e.endpoint_id", [],
      );
      return rows.map((r) => ({ endpoint: r.endpoint_id, pending: Number(r.pending), oldest: asDate(r.oldest)! }));
    },
    async purgeFinishedAlone(before, limit) {
      const found = await sql.select<{ id: number | string }>("SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ? LIMIT ?", [t(before), limit]);
      if (found.length === 0) return 0;
      // (still finished: one sent again meanwhile, from any node, is pending and stays)
      return sql.change(`DELETE FROM webhook_deliveries WHERE id IN (${found.map(() => '?').join(', ')}) AND state <> 'pending'`, found.map((r) => r.id));
    },
  };
}
