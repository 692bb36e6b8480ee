import type { Actor, EventType, KeptEvent, Subject } from '../events';
import type { Tx } from './transactions';

/** One entry of the audit log: a change a client or an operator made, as its event said it. */
export interface AuditEntry {
  id: string;
  applicationId: number;
  occurredAt: Date;
  type: EventType;
  version: number;
  actor: Actor;
  subject: Subject;
  data: Record<string, unknown>;
  address?: string;
  requestId?: string;
}

/**
 * Which entries a listing wants, newest first: those of one event type (or of every type beginning
 * with a prefix ending in `.`, such as `client.`), of one actor, of one subject, in a time range;
 * `before` continues a listing after the last entry of its previous page.
 */
export interface AuditQuery {
  applicationId: number;
  limit: number;
  before?: string;
  type?: string;
  actor?: { kind: Actor['kind']; id?: string };
  subject?: Subject;
  since?: Date;
  until?: Date;
}

/** The audit log (docs/audit.md): written in the change's own transaction, kept apart from records and their history. */
export interface AuditStore {
  append(events: KeptEvent[], tx: Tx): Promise<void>;
  list(query: AuditQuery): Promise<AuditEntry[]>;
}

/** The id an actor is filed under: its client_id, operator name, record id or SCIM token's id ('' for the system). */
export function actorId(actor: Actor): string {
  switch (actor.kind) {
    case 'account': return String(actor.accountId);
    case 'client': return actor.clientId;
    case 'operator': return actor.name;
    case 'scim': return actor.tokenId;
    case 'system': return '';
  }
}
