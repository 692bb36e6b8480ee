import { EVENT_TYPES, type Actor, type Subject } from './events';
import type { AuditQuery } from './storage/audit';

/** The most entries one page of the audit log holds. */
export const MAX_AUDIT_PAGE = 1000;

/** What of a listing's filters is not valid, and why (each adapter names the field its own way). */
export class AuditQueryError extends Error {
  constructor(readonly field: 'type' | 'actor' | 'subject' | 'since' | 'until' | 'limit' | 'before', message: string) {
    super(message);
  }
}

/** A listing's filters as people write them (the admin API's parameters, the CLI's options). */
export interface AuditFilters { type?: string; actor?: string; subject?: string; since?: string; until?: string; limit?: string; before?: string }

const DIGITS = /^[1-9]\d{0,18}$/;
/** Every kind of subject, once (compiles only while it names each of Subject['kind']). */
const SUBJECT_KIND_SET: Record<Subject['kind'], true> = { record: true, client: true, setting: true, provider: true, flow: true, application: true, webhook: true, organization: true, role: true, service_provider: true, attribute: true, api: true, app_role: true };
const SUBJECT_KINDS = Object.keys(SUBJECT_KIND_SET) as Subject['kind'][];
/** Every kind of actor, once (compiles only while it names each of Actor['kind']). */
const ACTOR_KIND_SET: Record<Actor['kind'], true> = { client: true, operator: true, account: true, scim: true, system: true };
const ACTOR_KINDS = Object.keys(ACTOR_KIND_SET) as Actor['kind'][];

/** One event type, or every type beginning with a prefix ending in `.` (`client.`). */
function eventType(type: string): string {
  const known = (EVENT_TYPES as readonly string[]).includes(type) || (type.endsWith('.') && EVENT_TYPES.some((t) => t.startsWith(type)));
  if (!known) {
    const families = [...new Set(EVENT_TYPES.map((t) => `${t.split('.')[0]}.`))];
    throw new AuditQueryError('type', `is not an event type; use one such as client.secret_reset, or a family: ${families.join(', ')}`);
  }
  return type;
}

/** A kind (`operator`), or a kind and who (`client:<client_id>`, `operator:<name>`, `account:<record id>`, `scim:<token id>`). */
function actor(raw: string): NonNullable<AuditQuery['actor']> {
  const [kind, ...rest] = raw.split(':');
  if (!(ACTOR_KINDS as readonly string[]).includes(kind) || (kind === 'system' && rest.length > 0)) {
    throw new AuditQueryError('actor', 'must be client, operator, account, scim or system, optionally followed by :who (client:<client_id>, operator:<name>, account:<record id>, scim:<token id>)');
  }
  return { kind: kind as Actor['kind'], ...(rest.length > 0 && { id: rest.join(':') }) };
}

/** What was changed, as kind:id (`record:42`, `client:<client_id>`, `setting:<key>`). */
function subject(raw: string): Subject {
  const at = raw.indexOf(':');
  const kind = raw.slice(0, Math.max(0, at));
  if (at < 1 || !(SUBJECT_KINDS as readonly string[]).includes(kind) || at === raw.length - 1) {
    throw new AuditQueryError('subject', `must be kind:id with a kind of ${SUBJECT_KINDS.join(', ')}, such as record:42`);
  }
  return { kind: kind as Subject['kind'], id: raw.slice(at + 1) };
}

/** A time bound: ISO 8601 with its zone (`2026-11-25T10:00:00Z`). */
function time(raw: string, field: 'since' | 'until'): Date {
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? new Date(raw) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw new AuditQueryError(field, 'must be an ISO 8601 time with its zone, such as 2026-11-25T10:00:00Z');
  return at;
}

/** The query of a listing's filters (100 entries unless `limit` says otherwise); AuditQueryError names the first one at fault. */
export function auditQuery(f: AuditFilters): Omit<AuditQuery, 'applicationId'> {
  if (f.limit !== undefined && (!DIGITS.test(f.limit) || Number(f.limit) > MAX_AUDIT_PAGE)) {
    throw new AuditQueryError('limit', `must be a whole number from 1 to ${MAX_AUDIT_PAGE}`);
  }
  if (f.before !== undefined && !DIGITS.test(f.before)) throw new AuditQueryError('before', 'must be the `next` of a previous page (a whole number)');
  const since = f.since === undefined ? undefined : time(f.since, 'since');
  const until = f.until === undefined ? undefined : time(f.until, 'until');
  if (since && until && since >= until) throw new AuditQueryError('until', 'must be later than since');
  return {
    limit: f.limit === undefined ? 100 : Number(f.limit),
    ...(f.before !== undefined && { before: f.before }),
    ...(f.type !== undefined && { type: eventType(f.type) }),
    ...(f.actor !== undefined && { actor: actor(f.actor) }),
    ...(f.subject !== undefined && { subject: subject(f.subject) }),
    ...(since && { since }),
    ...(until && { until }),
  };
}
