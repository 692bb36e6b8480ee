import { insertAll } from '../hot-rows';
import { asDate } from '../models';
import type { Sql } from '../sql';
import { actorId, type AuditEntry, type AuditQuery, type AuditStore } from '../../domain/storage/audit';
import type { Actor, EventType, KeptEvent, Subject } from '../../domain/events';
import type { Tx } from '../../domain/storage/transactions';

interface AuditRow {
  id: number | string; application_id: number | string; occurred_at: Date | string; event_type: string; event_version: number | string;
  actor_kind: string; actor_id: string; actor_client: string | null; subject_kind: string; subject_id: string; data: string; address: string | null; request_id: string | null;
}

/** The actor as an event had it, from its columns (the audit log's and the event store's). */
export function actorOf(kind: string, id: string, client: string | null): Actor {
  switch (kind) {
    case 'account': return { kind, accountId: Number(id), ...(client !== null && { clientId: client }) };
    case 'client': return { kind, clientId: id };
    case 'operator': return { kind, name: id };
    case 'scim': return { kind, tokenId: id };
    default: return { kind: 'system' };
  }
}

function toEntry(r: AuditRow): AuditEntry {
  const data = JSON.parse(r.data) as Record<string, unknown>;
  return {
    id: String(r.id), applicationId: Number(r.application_id), occurredAt: asDate(r.occurred_at), type: r.event_type as EventType,
    version: Number(r.event_version), actor: actorOf(r.actor_kind, r.actor_id, r.actor_client),
    subject: { kind: r.subject_kind as Subject['kind'], id: r.subject_id }, data,
    ...(r.address !== null && { address: r.address }), ...(r.request_id !== null && { requestId: r.request_id }),
  };
}

const AUDIT_COLUMNS = [
  'application_id', 'occurred_at', 'event_type', 'event_version', 'actor_kind', 'actor_id', 'actor_client', 'subject_kind', 'subject_id', 'data', 'address', 'request_id',
] as const;

/** The audit log's store (AuditStore of the storage contract) in SQL: appended in the change's transaction, listed newest first by id. */
export function createAuditQueries(sql: Sql): AuditStore {
  return {
    async append(events: KeptEvent[], tx: Tx): Promise<void> {
      await insertAll(sql, 'audit_log', AUDIT_COLUMNS, events.map((e) => ({
        application_id: e.applicationId, occurred_at: sql.time(e.occurredAt), event_type: e.type, event_version: e.version, actor_kind: e.actor.kind,
        actor_id: actorId(e.actor), actor_client: e.actor.kind === 'account' ? e.actor.clientId ?? null : null, subject_kind: e.subject.kind,
        subject_id: e.subject.id, data: JSON.stringify(e.data), address: e.origin.address?.slice(0, 64) ?? null, request_id: e.origin.requestId?.slice(0, 64) ?? null,
      })), tx);
    },

    async list(q: AuditQuery): Promise<AuditEntry[]> {
      const where = ['application_id = ?'];
      const values: unknown[] = [q.applicationId];
      const add = (clause: string, ...v: unknown[]) => {
        where.push(clause);
        values.push(...v);
      };
      if (q.before !== undefined) add('id < ?', Number(q.before));
      if (q.type?.endsWith('.')) add("event_type LIKE ? ESCAPE '!'", `${q.type.replace(/[!%_]/g, (c) => `!${c}`)}%`);
      else if (q.type !== undefined) add('event_type = ?', q.type);
      if (q.actor) add('actor_kind = ?', q.actor.kind);
      if (q.actor?.id !== undefined) add('actor_id = ?', q.actor.id);
      if (q.subject) add('subject_kind = ? AND subject_id = ?', q.subject.kind, q.subject.id);
      if (q.since) add('occurred_at >= ?', sql.time(q.since));
      if (q.until) add('occurred_at < ?', sql.time(q.until));
      const rows = await sql.select<AuditRow>(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`, [...values, q.limit]);
      return rows.map(toEntry);
    },
  };
}
